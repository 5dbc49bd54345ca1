"""DLedger: the Raft log that RocketMQ's DLedger commit-log groups (and the 5.x controller) run on.

Sans-IO modules, compatible with io.openmessaging.storage:dledger 0.3.2 (docs/dledger.md):
``entry.py`` (entry and index item bytes), ``store_files.py`` (the store directory),
``protocol.py`` (the RPC bodies and codes), ``raft.py`` (the state machine). No asyncio here.
"""
