"""Tests of nbcallback.widgets: state model, renderers, kernel-level behaviour."""
