"""Admin side of the broker: what mqadmin and the dashboard ask for (spec admin-and-dashboard.md)."""
