"""Fault-injection tests (issue 9): kills, hostile files, interrupts, faulty callbacks and data."""
