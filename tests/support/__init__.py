"""Helpers shared by the test suites (loopback MNIST mirror, subprocess runners)."""
