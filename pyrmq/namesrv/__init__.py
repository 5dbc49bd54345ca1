"""NameServer: route table, broker liveness, KV config."""
