"""Remoting protocol: codes, commands, framing (sans-IO) and the asyncio transport."""
