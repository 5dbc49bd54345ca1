"""RemotingCommand and its two header encodings, without I/O.

Java: remoting.protocol.RemotingCommand (fields, flag bits, opaque counter),
RemotingSerializable (JSON header via fastjson) and RocketMQSerializable (the
ROCKETMQ binary header). Spec: remoting-protocol.md §1.2-§1.5.

Wire frame: int32 frame length (excludes itself) | int32 word (top byte =
serialize type, low 24 bits = header length H) | H header bytes | body.
`encode` produces a whole frame; `decode_frame` takes one frame *without* the
length prefix and raises `RemotingProtocolError` for anything malformed;
any other exception escaping it is a bug.
"""

from __future__ import annotations

import itertools
import re
import struct
from dataclasses import dataclass
from typing import Any

import orjson

from pyrmq._speedups import pick
from pyrmq.protocol.codes import LanguageCode, ResponseCode, SerializeType
from pyrmq.protocol.errors import RemotingProtocolError
from pyrmq.protocol.version import PYRMQ_VERSION

#: flag bit 0 (Java RPC_TYPE): set on responses.
FLAG_RESPONSE = 0x1
#: flag bit 1 (Java RPC_ONEWAY): set on requests that must not be answered.
FLAG_ONEWAY = 0x2

#: Largest header length the 24-bit field can carry.
MAX_HEADER_LENGTH = 0xFFFFFF

_INT32 = struct.Struct(">i")
_PREFIX = struct.Struct(
    ">i"  # frame length = 4 + H + B
    "I"  # serialize type << 24 | H
)
#: Fixed part of the ROCKETMQ header (RocketMQSerializable#rocketMQProtocolEncode).
_RMQ_FIXED = struct.Struct(
    ">h"  # code (int16)
    "B"  # language code (byte)
    "h"  # version (int16)
    "i"  # opaque
    "i"  # flag
)
_RMQ_FIXED_SIZE = _RMQ_FIXED.size  # 13
_SHORT = struct.Struct(">h")

# Java's AtomicInteger requestId: getAndIncrement from 0, wrapping at 2^31.
_request_ids = itertools.count()


def next_opaque() -> int:
    """Next request id from the process-wide counter, signed 32-bit wrapping like Java."""
    n = next(_request_ids) & 0xFFFFFFFF
    return n - 0x100000000 if n & 0x80000000 else n


@dataclass(slots=True)
class RemotingCommand:
    """One request or response. `code` stays a plain int: unknown codes never raise.

    `ext_fields` is Java's `extFields` (all custom header fields as strings);
    insertion order is the wire order (decoding keeps it, encoding follows it),
    so a decoded frame re-encodes byte for byte. A value may be None where
    Java has null: a zero-length ROCKETMQ value or a JSON null. None is left
    out of JSON headers and written with length 0 in ROCKETMQ ones; readers
    (`ext()`, headers.py) treat it as absent, like Java.
    """

    code: int
    language: int = LanguageCode.JAVA
    version: int = PYRMQ_VERSION
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    ext_fields: dict[str, str] | None = None
    body: bytes | None = None
    serialize_type: int = SerializeType.JSON

    @property
    def is_response(self) -> bool:
        return bool(self.flag & FLAG_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & FLAG_ONEWAY)

    def mark_response(self) -> None:
        self.flag |= FLAG_RESPONSE

    def mark_oneway(self) -> None:
        self.flag |= FLAG_ONEWAY

    @classmethod
    def request(
        cls,
        code: int,
        ext_fields: dict[str, str] | None = None,
        body: bytes | None = None,
        *,
        oneway: bool = False,
    ) -> RemotingCommand:
        """A request with the next opaque (Java RemotingCommand.createRequestCommand)."""
        return cls(
            code=code,
            opaque=next_opaque(),
            flag=FLAG_ONEWAY if oneway else 0,
            ext_fields=ext_fields,
            body=body,
        )

    @classmethod
    def response(
        cls,
        code: int = ResponseCode.SUCCESS,
        remark: str | None = None,
        ext_fields: dict[str, str] | None = None,
        body: bytes | None = None,
    ) -> RemotingCommand:
        """A response (flag bit 0 set); the caller or the server sets the opaque."""
        return cls(code=code, flag=FLAG_RESPONSE, remark=remark, ext_fields=ext_fields, body=body)

    def make_response(
        self,
        code: int = ResponseCode.SUCCESS,
        remark: str | None = None,
        ext_fields: dict[str, str] | None = None,
        body: bytes | None = None,
    ) -> RemotingCommand:
        """The response to this request: same opaque and serialize type, our language/version."""
        return RemotingCommand(
            code=code,
            language=LanguageCode.JAVA,
            version=PYRMQ_VERSION,
            opaque=self.opaque,
            flag=FLAG_RESPONSE,
            remark=remark,
            ext_fields=ext_fields,
            body=body,
            serialize_type=self.serialize_type,
        )

    def ext(self, key: str, default: str | None = None) -> str | None:
        """ext_fields[key], or `default` when absent, null (None) or ext_fields is None."""
        ef = self.ext_fields
        v = None if ef is None else ef.get(key)
        return default if v is None else v

    def __repr__(self) -> str:
        kind = "response" if self.flag & FLAG_RESPONSE else ("oneway" if self.flag & FLAG_ONEWAY else "request")
        body = "None" if self.body is None else f"<{len(self.body)} bytes>"
        return (
            f"RemotingCommand({kind} code={self.code} opaque={self.opaque} flag={self.flag} "
            f"lang={self.language} ver={self.version} st={self.serialize_type} "
            f"remark={self.remark!r} ext={self.ext_fields!r} body={body})"
        )


# ---------------------------------------------------------------------------
# JSON header (serialize type 0): fastjson's output for the RemotingCommand bean.
# Properties sorted by name, nulls omitted, enums by name, no whitespace.

_LANGUAGE_NAMES: dict[int, str] = {m.value: m.name for m in LanguageCode}
_LANGUAGE_BY_NAME: dict[str, int] = {m.name: m.value for m in LanguageCode}


def _build_escape_table() -> dict[int, str]:
    # rocketmq-remoting 5.5.0 encodes headers with fastjson2 (RemotingSerializable):
    # \b \t \n \f \r " \\ as two-char escapes, other C0 controls as \u00xx with
    # lower-case hex; DEL, U+2028/9, '/' and non-ASCII raw. (fastjson 1.x, used up
    # to 5.3.x, writes upper-case hex and also escapes DEL and U+2028/9; both are
    # valid JSON for every reader; see docs/protocol-notes.md.)
    table = {c: f"\\u{c:04x}" for c in range(0x20)}
    table.update({0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r"})
    table[0x22] = '\\"'
    table[0x5C] = "\\\\"
    return table


_ESCAPES = _build_escape_table()
_NEEDS_ESCAPE = re.compile('[\x00-\x1f"\\\\]').search


def json_quote(s: str) -> str:
    """A JSON string literal exactly as rocketmq-remoting 5.5.0 (fastjson2) writes it."""
    if _NEEDS_ESCAPE(s) is None:
        return f'"{s}"'
    return '"' + s.translate(_ESCAPES) + '"'


def _wire_str(v: Any) -> str:
    # Java's String.valueOf for the values a careless caller may put in ext_fields.
    if v is True:
        return "true"
    if v is False:
        return "false"
    return str(v)


def _encode_json_header(cmd: RemotingCommand) -> bytes:
    # Fast path: orjson writes exactly fastjson2's bytes for this shape (keys in the
    # insertion order below = sorted, no whitespace, same string escapes; checked by
    # the golden tests). It cannot express Java's stringification of non-str values,
    # omitted nulls or '?' for lone surrogates: those take the slow path.
    ef = cmd.ext_fields
    if ef is None or _all_str(ef.values()):
        d: dict[str, Any] = {"code": cmd.code}
        if ef is not None:
            d["extFields"] = ef
        d["flag"] = cmd.flag
        d["language"] = _LANGUAGE_NAMES.get(cmd.language, "OTHER")
        d["opaque"] = cmd.opaque
        if cmd.remark is not None:
            d["remark"] = cmd.remark
        d["serializeTypeCurrentRPC"] = "JSON"
        d["version"] = cmd.version
        try:
            return orjson.dumps(d)
        except TypeError:  # orjson.JSONEncodeError: surrogates, huge ints, odd key types
            pass
    return _encode_json_header_slow(cmd)


def _all_str(values: Any) -> bool:
    return all(type(v) is str for v in values)


def _encode_json_header_slow(cmd: RemotingCommand) -> bytes:
    parts = ['{"code":', str(int(cmd.code))]
    ef = cmd.ext_fields
    if ef is not None:
        q = json_quote
        items = ",".join(
            f"{q(k)}:{q(v if type(v) is str else _wire_str(v))}"
            for k, v in ef.items()
            if k is not None and v is not None
        )
        parts.append(f',"extFields":{{{items}}}')
    # An int that is not a known LanguageCode is written as OTHER: every decoder
    # (fastjson enum by name, Go's string) accepts that (docs/protocol-notes.md).
    lang = _LANGUAGE_NAMES.get(cmd.language, "OTHER")
    parts.append(f',"flag":{int(cmd.flag)},"language":"{lang}","opaque":{int(cmd.opaque)}')
    if cmd.remark is not None:
        parts.append(',"remark":')
        parts.append(json_quote(cmd.remark))
    parts.append(f',"serializeTypeCurrentRPC":"JSON","version":{int(cmd.version)}}}')
    # Java String.getBytes(UTF_8) writes '?' for unpaired surrogates.
    return "".join(parts).encode("utf-8", "replace")


_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _json_int(obj: dict[str, Any], key: str, default: int) -> int:
    v = obj.get(key)
    if v is None:
        return default
    if type(v) is int:
        n = v
    elif type(v) is str:
        # fastjson coerces numeric strings into int properties.
        try:
            n = int(v.strip())
        except ValueError:
            raise RemotingProtocolError(f"JSON header: {key} is not an integer: {v!r}") from None
    else:
        raise RemotingProtocolError(f"JSON header: {key} has type {type(v).__name__}")
    if not _INT32_MIN <= n <= _INT32_MAX:
        raise RemotingProtocolError(f"JSON header: {key} out of int32 range: {n}")
    return n


def _json_scalar_str(v: Any, what: str) -> str:
    # fastjson coerces JSON numbers and booleans into String properties/values.
    if isinstance(v, str):  # orjson gives exact str
        return v
    t = type(v)
    if t is bool:
        return "true" if v else "false"
    if t is int:
        return str(v)
    if t is float:
        return repr(v)
    raise RemotingProtocolError(f"JSON header: {what} has type {t.__name__}")


def _decode_json_header(header: memoryview | bytes) -> RemotingCommand:
    try:
        obj = orjson.loads(header)
    except orjson.JSONDecodeError as e:
        raise RemotingProtocolError(f"undecodable JSON header: {e}") from None
    if type(obj) is not dict:
        raise RemotingProtocolError(f"JSON header is a {type(obj).__name__}, not an object")

    lang_v = obj.get("language")
    language: int
    if lang_v is None:
        language = LanguageCode.JAVA  # Java's field default
    elif type(lang_v) is str:
        # Unknown names become null in Java; we keep OTHER so the field stays an int.
        language = _LANGUAGE_BY_NAME.get(lang_v, LanguageCode.OTHER)
    elif type(lang_v) is int:
        # fastjson accepts the ordinal form; ordinal == code for every constant.
        language = lang_v if lang_v in _LANGUAGE_NAMES else LanguageCode.OTHER
    else:
        raise RemotingProtocolError(f"JSON header: language has type {type(lang_v).__name__}")

    remark_v = obj.get("remark")
    remark = None if remark_v is None else _json_scalar_str(remark_v, "remark")

    ef_v = obj.get("extFields")
    ext_fields: dict[str, str] | None
    if ef_v is None:
        ext_fields = None
    elif type(ef_v) is dict:
        ext_fields = {}
        for k, v in ef_v.items():
            if v is None:
                ext_fields[k] = None  # type: ignore[assignment]  # Java: key -> null
            else:
                ext_fields[k] = v if type(v) is str else _json_scalar_str(v, f"extFields[{k!r}]")
    else:
        raise RemotingProtocolError(f"JSON header: extFields has type {type(ef_v).__name__}")

    return RemotingCommand(
        code=_json_int(obj, "code", 0),
        language=language,
        version=_json_int(obj, "version", 0),
        opaque=_json_int(obj, "opaque", 0),
        flag=_json_int(obj, "flag", 0),
        remark=remark,
        ext_fields=ext_fields,
        serialize_type=SerializeType.JSON,
    )


_encode_json_header = pick(_encode_json_header)  # the compiled twins (pyrmq/_speedups) when built
_decode_json_header = pick(_decode_json_header)


# ---------------------------------------------------------------------------
# ROCKETMQ header (serialize type 1): RocketMQSerializable.


#: ext field key -> its int16 length + UTF-8 bytes: the keys of a protocol are a few constants
_KEY_PARTS: dict[str, bytes] = {}
_KEY_PARTS_MAX = 1024


def _key_part(k: str) -> bytes:
    kb = k.encode("utf-8", "replace")
    if len(kb) > 0x7FFF:
        raise ValueError(f"ext field key longer than 32767 bytes: {k[:40]!r}...")
    part = _SHORT.pack(len(kb)) + kb
    if len(_KEY_PARTS) < _KEY_PARTS_MAX:
        _KEY_PARTS[k] = part
    return part


def _encode_rocketmq_header(cmd: RemotingCommand) -> bytes:
    try:
        fixed = _RMQ_FIXED.pack(cmd.code, cmd.language & 0xFF, cmd.version, cmd.opaque, cmd.flag)
    except struct.error as e:
        raise ValueError(
            f"command does not fit the ROCKETMQ header (code/version int16, opaque/flag int32): {e}"
        ) from None
    out = bytearray(fixed)
    remark = cmd.remark
    if remark:
        rb = remark.encode("utf-8", "replace")
        out += _INT32.pack(len(rb))
        out += rb
    else:
        out += b"\x00\x00\x00\x00"  # empty and null remark are the same on this wire
    ef = cmd.ext_fields
    if ef:
        map_at = len(out)
        out += b"\x00\x00\x00\x00"
        key_parts = _KEY_PARTS
        pack_int = _INT32.pack
        for k, v in ef.items():
            if k is None:
                continue  # Java skips null keys
            kp = key_parts.get(k) or _key_part(k)
            # None (Java null, decoded from a zero-length value) is written with length 0
            vb = b"" if v is None else (v if type(v) is str else _wire_str(v)).encode("utf-8", "replace")
            out += kp
            out += pack_int(len(vb))
            out += vb
        _INT32.pack_into(out, map_at, len(out) - map_at - 4)
    else:
        out += b"\x00\x00\x00\x00"
    return bytes(out)


def _decode_rocketmq_header(view: memoryview) -> RemotingCommand:
    h = view.tobytes()  # headers are small; bytes slicing + decode beats memoryview
    hlen = len(h)
    if hlen < _RMQ_FIXED_SIZE + 8:
        raise RemotingProtocolError(f"ROCKETMQ header too short: {hlen} bytes")
    code, language, version, opaque, flag = _RMQ_FIXED.unpack_from(h, 0)
    pos = _RMQ_FIXED_SIZE
    (rlen,) = _INT32.unpack_from(h, pos)
    pos += 4
    remark = None
    if rlen != 0:
        # Java readStr: length limited by the header length; 0 means null.
        if rlen < 0 or rlen > hlen or pos + rlen + 4 > hlen:
            raise RemotingProtocolError(f"ROCKETMQ header: bad remark length {rlen} (header {hlen})")
        remark = h[pos : pos + rlen].decode("utf-8", "replace")
        pos += rlen
    (elen,) = _INT32.unpack_from(h, pos)
    pos += 4
    ext_fields: dict[str, str] | None = None
    if elen > 0:  # Java: a non-positive map length means no map
        if elen > hlen or pos + elen > hlen:
            raise RemotingProtocolError(f"ROCKETMQ header: extFields length {elen} exceeds header length {hlen}")
        ext_fields = {}
        end = pos + elen
        unpack_short, unpack_int = _SHORT.unpack_from, _INT32.unpack_from
        while pos < end:
            if pos + 2 > hlen:
                raise RemotingProtocolError("ROCKETMQ header: truncated ext field key length")
            (klen,) = unpack_short(h, pos)
            pos += 2
            if klen < 0 or klen > elen or pos + klen + 4 > hlen:
                raise RemotingProtocolError(f"ROCKETMQ header: bad ext field key length {klen}")
            key_at, key_end = pos, pos + klen
            (vlen,) = unpack_int(h, key_end)
            value_at = key_end + 4
            if vlen < 0 or vlen > elen or value_at + vlen > hlen:
                raise RemotingProtocolError(f"ROCKETMQ header: bad ext field value length {vlen}")
            pos = value_at + vlen
            # A zero-length value is Java's null: kept as None (a later duplicate
            # wins, HashMap.put) and re-encoded with length 0, so frames round-trip.
            ext_fields[h[key_at:key_end].decode("utf-8", "replace")] = (
                h[value_at:pos].decode("utf-8", "replace") if vlen else None  # type: ignore[assignment]
            )
    return RemotingCommand(
        code=code,
        language=language,
        version=version,
        opaque=opaque,
        flag=flag,
        remark=remark,
        ext_fields=ext_fields,
        serialize_type=SerializeType.ROCKETMQ,
    )


# the compiled twins (pyrmq/_speedups) when built; the functions above are the reference
_encode_rocketmq_header = pick(_encode_rocketmq_header)
_decode_rocketmq_header = pick(_decode_rocketmq_header)


# ---------------------------------------------------------------------------
# Frames


def encode_header(cmd: RemotingCommand) -> bytes:
    """Just the header bytes (H), in the command's serialize type."""
    st = cmd.serialize_type
    if st == SerializeType.JSON:
        return _encode_json_header(cmd)
    if st == SerializeType.ROCKETMQ:
        return _encode_rocketmq_header(cmd)
    raise ValueError(f"unknown serialize type {st}")


def encode_parts(cmd: RemotingCommand) -> tuple[bytes, bytes | memoryview | None]:
    """(length prefix + header-length word + header, body) for transport.writelines."""
    header = encode_header(cmd)
    hlen = len(header)
    if hlen > MAX_HEADER_LENGTH:
        raise ValueError(f"header of {hlen} bytes does not fit the 24-bit length field")
    body = cmd.body
    blen = len(body) if body else 0
    prefix = _PREFIX.pack(4 + hlen + blen, (cmd.serialize_type << 24) | hlen)
    return prefix + header, (body if blen else None)


def encode(cmd: RemotingCommand) -> bytes:
    """The whole frame, length prefix included (Java RemotingCommand#fastEncodeHeader + body)."""
    head, body = encode_parts(cmd)
    return head + bytes(body) if body is not None else head


def decode_frame(frame: bytes | bytearray | memoryview) -> RemotingCommand:
    """Decode one frame given *without* its 4-byte length prefix (Java RemotingCommand.decode).

    Raises RemotingProtocolError for malformed input; anything else is a bug.
    The body is copied out, so the command holds no view of `frame`.
    """
    mv = memoryview(frame)
    if mv.ndim != 1 or mv.itemsize != 1:
        mv = mv.cast("B")
    n = len(mv)
    if n < 4:
        raise RemotingProtocolError(f"frame of {n} bytes has no header-length word")
    (word,) = _PREFIX_WORD.unpack_from(mv, 0)
    st = word >> 24
    hlen = word & 0xFFFFFF
    if hlen > n - 4:
        raise RemotingProtocolError(f"bad header length {hlen}: frame has only {n - 4} bytes after the length word")
    header = mv[4 : 4 + hlen]
    try:
        if st == 0:
            cmd = _decode_json_header(header)
        elif st == 1:
            cmd = _decode_rocketmq_header(header)
        else:
            raise RemotingProtocolError(f"unknown serialize type {st}")
    except struct.error as e:  # defensive: every length is checked above
        raise RemotingProtocolError(f"truncated ROCKETMQ header: {e}") from None
    if n > 4 + hlen:
        cmd.body = bytes(mv[4 + hlen :])
    return cmd


decode_frame = pick(decode_frame)  # the compiled twin (pyrmq/_speedups) when built


_PREFIX_WORD = struct.Struct(">I")
