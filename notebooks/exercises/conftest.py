"""nbval collects the master notebook (its test cells run every public and hidden test
against the reference solution), and the Chinese master in zh_CN/; the generated copies under dist/ and
dist_zh_CN/ are not collected."""
collect_ignore = ["dist", "dist_zh_CN"]
