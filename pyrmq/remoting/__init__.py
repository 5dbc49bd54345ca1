"""Remoting transport: connections, request dispatch and the client, over the sans-IO codec in pyrmq.protocol."""
