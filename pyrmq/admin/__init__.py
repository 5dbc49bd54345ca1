"""mqadmin-compatible admin CLI."""
