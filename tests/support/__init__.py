"""Shared test helpers: test doubles and golden files (fakes), suite markers (suites), free ports,
subprocesses, Java/Go tool runners and the servers built on them."""
