"""PySpark data sources over RocketMQ store directories."""
