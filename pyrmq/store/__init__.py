"""Message store in RocketMQ's exact on-disk formats. Never imports the broker or asyncio."""
