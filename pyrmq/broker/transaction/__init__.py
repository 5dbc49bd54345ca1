"""Transactional messages: half messages, END_TRANSACTION, op messages, check-back.

Java: ``broker/transaction`` and ``broker/transaction/queue``,
``broker/processor/EndTransactionProcessor``."""
