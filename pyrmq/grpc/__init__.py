"""The built-in gRPC endpoint: rocketmq-apis' MessagingService v2 for the 5.x SDKs.

Java: the proxy's ``grpc/v2`` activities in "local" mode, where the proxy runs inside the
broker and calls the broker's own processors. Here each RPC is turned into the remoting
request the Java proxy would make and handed to this broker's processor table in-process
(``local.py``). The protocol messages come from the official ``rocketmq-python-client``
package (``pyrmq[grpc]``); without it pyrmq runs and the endpoint refuses to start.
"""
