"""Shared test helpers: free ports, subprocesses, Java/Go tool runners."""
