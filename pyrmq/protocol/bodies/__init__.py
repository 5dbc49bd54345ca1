"""JSON bodies in the fastjson dialect, one module per requester family."""
