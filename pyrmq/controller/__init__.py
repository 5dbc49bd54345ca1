"""The 5.x controller: broker ids, master election and SyncStateSets for controller-mode brokers (docs/controller.md)."""
