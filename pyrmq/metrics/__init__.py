"""Built-in metrics with RocketMQ 5.x's names, exposed the way Java's OpenTelemetry Prometheus
exporter shows them (docs/operations.md). Sans-IO instruments in ``registry``, the text format in
``exposition``, the HTTP endpoint in ``http``."""
