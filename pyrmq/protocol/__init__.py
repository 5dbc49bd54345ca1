"""The wire vocabulary, sans-IO: codes, RemotingCommand, framing, errors, every header and body.

Java keeps these in ``remoting/protocol/{header,body}``; nothing here does I/O or imports asyncio.
"""
