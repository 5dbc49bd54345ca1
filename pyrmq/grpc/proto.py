"""The v2 protocol messages and service stubs, from the official Python SDK's generated modules.

pyrmq ships no copy of the .proto files: ``rocketmq-python-client`` (PyPI) carries the
generated ``definition_pb2``/``service_pb2``/``service_pb2_grpc``. Import only after
``config.grpc_missing()`` said None.
"""

from __future__ import annotations

from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as spb
from rocketmq.grpc_protocol import service_pb2_grpc as spb_grpc

__all__ = ["pb", "spb", "spb_grpc"]
