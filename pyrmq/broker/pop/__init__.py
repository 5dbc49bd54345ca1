"""POP consumption: request modes, server-side assignment, pop/ack/revive (docs/pop.md)."""
