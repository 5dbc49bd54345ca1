"""Request and response headers (ext fields), one module per requester family."""
