"""Classic master/slave replication of the commit log. Java: store.ha (DefaultHAService,
DefaultHAConnection, DefaultHAClient, GroupTransferService).

protocol.py is the sans-IO wire format; master.py serves slaves on haListenPort; slave.py
replicates from a master. Both sit on the store (MessageStore.append_to_commit_log and
get_commit_log_data) and know nothing of the broker or the remoting layer.
"""
