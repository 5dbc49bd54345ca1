"""Message filtering beyond tags: SQL92 selectors (``sql92``), the consumer filter
manager (``consumerFilter.json``) and the store-side message filter. Java: the
``filter`` module and ``broker/filter``."""
