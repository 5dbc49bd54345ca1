"""pyrmq: a Python NameServer and Broker for Apache RocketMQ clients and stores."""

__version__ = "0.1.0"
