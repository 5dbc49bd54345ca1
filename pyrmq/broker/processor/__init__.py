"""The broker's request processors, one module per family of request codes.

Java: ``broker/processor/*``. Each processor is given the few managers and
services it uses (never the BrokerController), so this package imports
nothing that imports it back: the controller builds the processors
(``BrokerController.processors()``) and registers them with both servers.
A processor raises the typed errors of ``pyrmq.protocol.errors``; the
channel turns them into responses. Outcomes that are not errors
(PULL_NOT_FOUND, a consumer's offset not found, ...) are returned values.
"""
