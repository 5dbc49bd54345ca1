"""The broker's request processors, one module per family of request codes.

Java: ``broker/processor/*``. Each processor is given the few managers and
services it uses (never the BrokerController), so this package imports
nothing that imports it back: the controller builds the processors
(``BrokerController.processors()``) and registers them with both servers.
A processor raises the typed errors of ``pyrmq.protocol.errors``; the
channel turns them into responses (``remoting.channel.call_handler``, also
what tests and the pull re-run use). Returned, not raised: outcomes that are
not errors (PULL_NOT_FOUND, QUERY_NOT_FOUND for an offset never committed,
...), the send and pull families' error answers, which carry ext fields
(MSG_REGION/TRACE_ON, forbiddenType) as Java's do, and Java's remark-less
answers (SLAVE_NOT_AVAILABLE, ILLEGAL_OPERATION of END_TRANSACTION).
"""

#: SYSTEM_BUSY remark of a request whose processor rejects it before processing
#: (Java NettyRemotingAbstract#processRequestCommand, NettyRequestProcessor#rejectRequest)
REJECT_REQUEST_REMARK = "[REJECTREQUEST]system busy, start flow control for a while"
