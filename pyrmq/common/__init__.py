"""What every pyrmq package shares: Java language behaviour, properties and settings, constants, clock."""
