"""A master that exists only in a name server's tables: brokerId 0 of a broker name, registered
with an HA address where nothing but a listening socket waits. A slave of that broker name that
follows the name server's REGISTER_BROKER answer (haServerAddr, masterAddr) connects there; one
with haMasterAddress set must not. The socket accepts and holds every connection (it sends
nothing, so a client keeps it until its haHousekeepingInterval), and counts them."""

from __future__ import annotations

import socket
import struct

from pyrmq.protocol.bodies.common import TopicConfigAndMappingSerializeWrapper
from pyrmq.protocol.bodies.namesrv import RegisterBrokerBody
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand, decode_frame, encode
from pyrmq.protocol.headers.namesrv import RegisterBrokerRequestHeader, RegisterBrokerResponseHeader
from pyrmq.store import message as m
from support.ports import free_port


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("the name server closed the connection")
        out += chunk
    return out


def register(
    namesrv_addr: str, cluster: str, broker_name: str, broker_id: int, broker_addr: str, ha_addr: str
) -> tuple[socket.socket, RegisterBrokerResponseHeader]:
    """REGISTER_BROKER with no topics over a new connection, which stays open (a name server drops
    a broker whose channel closes); the answer names the group's master (haServerAddr, masterAddr)."""
    host, port = namesrv_addr.rsplit(":", 1)
    channel = socket.create_connection((host, int(port)), timeout=10)
    body = RegisterBrokerBody(TopicConfigAndMappingSerializeWrapper(), []).encode()
    header = RegisterBrokerRequestHeader(
        broker_name=broker_name,
        broker_addr=broker_addr,
        cluster_name=cluster,
        ha_server_addr=ha_addr,
        broker_id=broker_id,
        body_crc32=m.crc32(body),
    )
    channel.sendall(encode(RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext_fields(), body)))
    (length,) = struct.unpack(">i", _read_exactly(channel, 4))
    answer = decode_frame(_read_exactly(channel, length))
    assert answer.code == ResponseCode.SUCCESS, answer
    return channel, RegisterBrokerResponseHeader.from_ext_fields(answer.ext_fields or {})


class DecoyMaster:
    """Registered once at ``namesrv_addr`` until close()."""

    def __init__(self, namesrv_addr: str, cluster: str, broker_name: str) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.listener.setblocking(False)
        self.ha_addr = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.broker_addr = f"127.0.0.1:{free_port()}"  # nothing listens there
        self._held: list[socket.socket] = []
        self.namesrv_addr, self.cluster, self.broker_name = namesrv_addr, cluster, broker_name
        self._channel, _ = register(namesrv_addr, cluster, broker_name, 0, self.broker_addr, self.ha_addr)

    def answer_to_a_slave(self) -> RegisterBrokerResponseHeader:
        """What the name server answers a slave of this broker name that registers now (the
        registration is dropped again with its connection)."""
        channel, answer = register(
            self.namesrv_addr, self.cluster, self.broker_name, 99, f"127.0.0.1:{free_port()}", "127.0.0.1:1"
        )
        channel.close()
        return answer

    def connections(self) -> int:
        """How many connections its HA address was offered so far."""
        while True:
            try:
                conn, _ = self.listener.accept()
            except BlockingIOError:
                return len(self._held)
            self._held.append(conn)

    def close(self) -> None:
        for conn in self._held:
            conn.close()
        self._channel.close()
        self.listener.close()
