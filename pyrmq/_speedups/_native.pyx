# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled twins of pyrmq's hot codec functions; the Python functions named in each docstring
are the reference. Every function here returns exactly what its reference returns. Anything
unusual (a bad length, an out-of-range number, a type other than the common one, a lone
surrogate) goes to the reference, which then produces the result or raises its own error: the
error paths have one definition, in Python."""

from libc.stdint cimport INT64_MAX, INT64_MIN, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.buffer cimport PyBUF_FORMAT, PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytearray cimport PyByteArray_AS_STRING
from cpython.object cimport PyObject
from cpython.unicode cimport PyUnicode_DecodeUTF8
import os

cdef object _references = None
cdef object _RemotingCommand = None
cdef object _ROCKETMQ = None


cdef object _ref(str name):
    global _references
    if _references is None:
        from pyrmq._speedups import REFERENCES
        _references = REFERENCES
    return _references[name]


cdef inline uint32_t _u32(const unsigned char* p) noexcept nogil:
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | <uint32_t>p[3]


cdef inline int32_t _i32(const unsigned char* p) noexcept nogil:
    return <int32_t>_u32(p)


cdef inline int16_t _i16(const unsigned char* p) noexcept nogil:
    return <int16_t>((<uint16_t>p[0] << 8) | <uint16_t>p[1])


cdef inline void _put32(unsigned char* p, uint32_t v) noexcept nogil:
    p[0] = (v >> 24) & 0xFF
    p[1] = (v >> 16) & 0xFF
    p[2] = (v >> 8) & 0xFF
    p[3] = v & 0xFF


cdef inline void _put16(unsigned char* p, uint16_t v) noexcept nogil:
    p[0] = (v >> 8) & 0xFF
    p[1] = v & 0xFF


# --- pyrmq.common.java_lang.java_string_hash -------------------------------------------------------


def java_string_hash(s):
    """Reference: pyrmq.common.java_lang.java_string_hash (String#hashCode over UTF-16 units)."""
    if type(s) is not str:
        return _ref("java_string_hash")(s)
    cdef uint32_t h = 0, u
    cdef Py_UCS4 c
    for c in <str>s:
        u = <uint32_t>c
        if u < 0x10000:
            if 0xD800 <= u <= 0xDFFF:  # a lone surrogate: the reference's UTF-16 encoding raises
                return _ref("java_string_hash")(s)
            h = h * 31 + u
        else:
            u -= 0x10000
            h = h * 31 + (0xD800 + (u >> 10))
            h = h * 31 + (0xDC00 + (u & 0x3FF))
    return <int32_t>h


cdef dict _orders = None


def hashmap_order(d, capacity=128):
    """Reference: pyrmq.common.java_lang.hashmap_order. A key sequence seen before takes its
    order from the reference's own cache (java_lang._ORDERS); a new one goes to the reference."""
    global _orders
    cdef PyObject* p
    if type(d) is not dict:
        return _ref("hashmap_order")(d, capacity)
    if _orders is None:
        from pyrmq.common import java_lang

        _orders = java_lang._ORDERS
    keys = tuple(<dict>d)
    try:
        p = PyDict_GetItem(_orders, (keys, capacity))
    except TypeError:
        return _ref("hashmap_order")(d, capacity)
    if p == NULL:
        return _ref("hashmap_order")(d, capacity)
    order = <object>p
    if order == keys:
        return dict(<dict>d)
    return {k: (<dict>d)[k] for k in order}


# --- pyrmq.protocol.headers.base._parse_java_int and _header_kwargs ---------------------------------


cdef object _parse_int_fast(object v):
    """[+-]?[0-9]+ of at most 18 characters as an int; None for anything else."""
    cdef str s = <str>v
    cdef Py_ssize_t n = len(s), i = 0
    cdef Py_UCS4 c
    cdef int64_t acc = 0
    cdef bint neg = False
    if n == 0 or n > 18:
        return None
    c = s[0]
    if c == u'+' or c == u'-':
        if n == 1:
            return None
        neg = c == u'-'
        i = 1
    while i < n:
        c = s[i]
        if c < u'0' or c > u'9':
            return None
        acc = acc * 10 + (<int64_t>c - 48)
        i += 1
    return -acc if neg else acc


def parse_java_int(v):
    """Reference: pyrmq.protocol.headers.base._parse_java_int."""
    if type(v) is str:
        r = _parse_int_fast(v)
        if r is not None:
            return r
    return _ref("parse_java_int")(v)


cdef int _bool_fast(str s):
    """1 / 0 for an ASCII string (lower-cased, it is "true" or not); -1 for the reference."""
    cdef Py_ssize_t n = len(s), i
    cdef Py_UCS4 c
    if n != 4:  # no character lower-cases to two of "true"'s: false whatever its case
        return 0
    for i in range(4):
        c = s[i]
        if c > 127:
            return -1
        if u'A' <= c <= u'Z':
            c = <Py_UCS4>(<uint32_t>c + 32)
        if c != u"true"[i]:
            return 0
    return 1


def parse_java_bool(v):
    """Reference: pyrmq.protocol.headers.base._parse_java_bool."""
    cdef int r
    if type(v) is str:
        r = _bool_fast(v)
        if r >= 0:
            return r == 1
    return _ref("parse_java_bool")(v)


def header_kwargs(tuple table, ext):
    """Reference: pyrmq.protocol.headers.base._header_kwargs (a typed header's fields from
    ext_fields); a missing or bad required field is left to the reference, which raises."""
    cdef dict kwargs = {}
    cdef tuple f
    cdef PyObject* p
    cdef int b
    if type(ext) is not dict:
        return _ref("header_kwargs")(table, ext)
    for fo in table:
        if not isinstance(fo, tuple) or len(<tuple>fo) != 6:  # a _Field (a NamedTuple) is a tuple
            return _ref("header_kwargs")(table, ext)
        f = <tuple>fo
        p = PyDict_GetItem(<dict>ext, f[1])
        if p == NULL or <object>p is None:
            if f[3]:
                return _ref("header_kwargs")(table, ext)
            continue
        v = <object>p
        parse = f[5]
        if parse is None:
            kwargs[f[0]] = v
            continue
        if type(v) is str:
            if parse is parse_java_int:
                r = _parse_int_fast(v)
                if r is not None:
                    kwargs[f[0]] = r
                    continue
            elif parse is parse_java_bool:
                b = _bool_fast(v)
                if b >= 0:
                    kwargs[f[0]] = b == 1
                    continue
        try:
            kwargs[f[0]] = parse(v)
        except (ValueError, KeyError):
            if f[3]:
                return _ref("header_kwargs")(table, ext)
    return kwargs


def header_ext_fields(tuple table, header):
    """Reference: pyrmq.protocol.headers.base._header_ext_fields. String, boolean and int fields
    (kinds 0, 2, 1) are written here; a float or enum field, or an int field holding anything but
    an int, goes to the reference."""
    cdef dict out = {}
    cdef tuple f
    for fo in table:
        if not isinstance(fo, tuple) or len(<tuple>fo) != 6:
            return _ref("header_ext_fields")(table, header)
        f = <tuple>fo
        v = getattr(header, f[0])
        if v is None:
            continue
        kind = f[2]
        if kind == 0:
            out[f[1]] = v
        elif kind == 2:
            out[f[1]] = "true" if v else "false"
        elif kind == 1 and type(v) is int:
            out[f[1]] = str(v)
        else:
            return _ref("header_ext_fields")(table, header)
    return out


# --- pyrmq.protocol.command: the ROCKETMQ header codec ---------------------------------------------


cdef inline object _utf8(const unsigned char* p, Py_ssize_t n):
    return PyUnicode_DecodeUTF8(<const char*>p, n, "replace")


cdef object _JSON = None
cdef object _JAVA = None
cdef object _OTHER = None
cdef dict _LANGUAGE_BY_NAME = None
cdef object _orjson_loads = None


cdef dict _LANGUAGE_NAMES = None
cdef object _orjson_dumps = None


cdef void _load_command() except *:
    global _RemotingCommand, _ROCKETMQ, _JSON, _JAVA, _OTHER, _LANGUAGE_BY_NAME, _LANGUAGE_NAMES
    global _orjson_loads, _orjson_dumps
    import orjson
    from pyrmq.protocol import command
    from pyrmq.protocol.codes import LanguageCode, SerializeType

    _ROCKETMQ, _JSON = SerializeType.ROCKETMQ, SerializeType.JSON
    _JAVA, _OTHER = LanguageCode.JAVA, LanguageCode.OTHER
    _LANGUAGE_BY_NAME = command._LANGUAGE_BY_NAME
    _LANGUAGE_NAMES = command._LANGUAGE_NAMES
    _orjson_loads, _orjson_dumps = orjson.loads, orjson.dumps
    _RemotingCommand = command.RemotingCommand


cdef inline bint _json_int32(dict obj, str key, int64_t* out):
    """An int32 property that is absent (0) or a JSON integer in range; False for the reference."""
    cdef PyObject* p = PyDict_GetItem(obj, key)
    cdef int overflow = 0
    cdef long long x
    if p == NULL or <object>p is None:
        out[0] = 0
        return True
    if type(<object>p) is not int:
        return False
    x = PyLong_AsLongLongAndOverflow(<object>p, &overflow)
    if overflow or x < -2147483648 or x > 2147483647:
        return False
    out[0] = x
    return True


cdef object _json_command(object header, object body):
    """The RemotingCommand of a JSON header in its common shape (int fields as JSON integers, a
    known or absent language name, string remark and values), or None for the reference."""
    cdef int64_t code = 0, version = 0, opaque = 0, flag = 0
    cdef PyObject* p
    if _RemotingCommand is None:
        _load_command()
    try:
        obj = _orjson_loads(header)
    except Exception:
        return None
    if type(obj) is not dict:
        return None
    if not (
        _json_int32(<dict>obj, "code", &code)
        and _json_int32(<dict>obj, "version", &version)
        and _json_int32(<dict>obj, "opaque", &opaque)
        and _json_int32(<dict>obj, "flag", &flag)
    ):
        return None
    lang_v = (<dict>obj).get("language")
    if lang_v is None:
        language = _JAVA
    elif type(lang_v) is str:
        p = PyDict_GetItem(_LANGUAGE_BY_NAME, lang_v)
        language = <object>p if p != NULL else _OTHER
    else:
        return None
    remark = (<dict>obj).get("remark")
    if remark is not None and type(remark) is not str:
        return None
    ext = (<dict>obj).get("extFields")
    if ext is not None:
        if type(ext) is not dict:
            return None
        for v in (<dict>ext).values():
            if v is not None and type(v) is not str:
                return None
    return _RemotingCommand(code, language, version, opaque, flag, remark, ext, body, _JSON)


def encode_json_header(cmd):
    """Reference: pyrmq.protocol.command._encode_json_header (its orjson fast path: string
    values only; anything else goes to the reference and its slow path)."""
    cdef PyObject* p
    if _RemotingCommand is None:
        _load_command()
    ef = cmd.ext_fields
    if ef is not None:
        if type(ef) is not dict:
            return _ref("encode_json_header")(cmd)
        for v in (<dict>ef).values():
            if type(v) is not str:
                return _ref("encode_json_header")(cmd)
    d = {"code": cmd.code}
    if ef is not None:
        d["extFields"] = ef
    d["flag"] = cmd.flag
    lang = cmd.language
    if not isinstance(lang, int):
        return _ref("encode_json_header")(cmd)
    p = PyDict_GetItem(_LANGUAGE_NAMES, lang)
    d["language"] = <object>p if p != NULL else "OTHER"
    d["opaque"] = cmd.opaque
    remark = cmd.remark
    if remark is not None:
        d["remark"] = remark
    d["serializeTypeCurrentRPC"] = "JSON"
    d["version"] = cmd.version
    try:
        return _orjson_dumps(d)
    except TypeError:
        return _ref("encode_json_header")(cmd)


def decode_json_header(header):
    """Reference: pyrmq.protocol.command._decode_json_header."""
    cmd = _json_command(header, None)
    if cmd is None:
        return _ref("decode_json_header")(header)
    return cmd


cdef object _decode_header(const unsigned char* h, Py_ssize_t hlen, object body):
    """The RemotingCommand of a ROCKETMQ header, or None when the header is malformed (the
    caller hands it to the reference, which raises)."""
    cdef Py_ssize_t pos, end, key_at, value_at
    cdef int64_t rlen, elen, klen, vlen
    cdef dict ext_fields
    if hlen < 21:
        return None
    pos = 13
    rlen = _i32(h + pos)
    pos += 4
    remark = None
    if rlen != 0:
        if rlen < 0 or rlen > hlen or pos + rlen + 4 > hlen:
            return None
        remark = _utf8(h + pos, rlen)
        pos += rlen
    elen = _i32(h + pos)
    pos += 4
    ext = None
    if elen > 0:
        if elen > hlen or pos + elen > hlen:
            return None
        ext_fields = {}
        end = pos + elen
        while pos < end:
            if pos + 2 > hlen:
                return None
            klen = _i16(h + pos)
            pos += 2
            if klen < 0 or klen > elen or pos + klen + 4 > hlen:
                return None
            key_at = pos
            vlen = _i32(h + pos + klen)
            value_at = pos + klen + 4
            if vlen < 0 or vlen > elen or value_at + vlen > hlen:
                return None
            pos = value_at + vlen
            ext_fields[_utf8(h + key_at, klen)] = _utf8(h + value_at, vlen) if vlen else None
        ext = ext_fields
    if _RemotingCommand is None:
        _load_command()
    # RemotingCommand's field order: code language version opaque flag remark ext_fields body serialize_type
    return _RemotingCommand(_i16(h), h[2], _i16(h + 3), _i32(h + 5), _i32(h + 9), remark, ext, body, _ROCKETMQ)


def decode_rocketmq_header(view):
    """Reference: pyrmq.protocol.command._decode_rocketmq_header."""
    if type(view) is not memoryview:
        return _ref("decode_rocketmq_header")(view)
    cdef bytes hb = view.tobytes()
    cmd = _decode_header(<const unsigned char*>PyBytes_AS_STRING(hb), PyBytes_GET_SIZE(hb), None)
    if cmd is None:
        return _ref("decode_rocketmq_header")(view)
    return cmd


def decode_frame(frame):
    """Reference: pyrmq.protocol.command.decode_frame. A ROCKETMQ header is decoded straight
    from the frame's buffer, a JSON one by orjson from a copy; anything unusual goes to the
    reference."""
    cdef Py_buffer buf
    cdef const unsigned char* f
    cdef Py_ssize_t n, hlen
    cdef uint32_t word
    try:
        PyObject_GetBuffer(frame, &buf, PyBUF_SIMPLE)
    except Exception:  # not a buffer, or not a contiguous one
        return _ref("decode_frame")(frame)
    try:
        f = <const unsigned char*>buf.buf
        n = buf.len
        if n < 4:
            cmd = None
        else:
            word = _u32(f)
            hlen = word & 0xFFFFFF
            if (word >> 24) > 1 or hlen > n - 4:
                cmd = None
            else:
                body = PyBytes_FromStringAndSize(<const char*>f + 4 + hlen, n - 4 - hlen) if n > 4 + hlen else None
                if word >> 24:
                    cmd = _decode_header(f + 4, hlen, body)
                else:
                    cmd = _json_command(PyBytes_FromStringAndSize(<const char*>f + 4, hlen), body)
    finally:
        PyBuffer_Release(&buf)
    if cmd is None:
        return _ref("decode_frame")(frame)
    return cmd


#: ext field key -> its int16 length + UTF-8 bytes (keys are a protocol's few constants)
cdef dict _key_parts = {}


cdef bint _int_in(object v, long long lo, long long hi):
    cdef int overflow = 0
    cdef long long x
    if not isinstance(v, int):
        return False
    x = PyLong_AsLongLongAndOverflow(v, &overflow)
    return overflow == 0 and lo <= x <= hi


def encode_rocketmq_header(cmd):
    """Reference: pyrmq.protocol.command._encode_rocketmq_header."""
    code = cmd.code
    version = cmd.version
    opaque = cmd.opaque
    flag = cmd.flag
    lang = cmd.language
    if not (
        _int_in(code, -32768, 32767)
        and _int_in(version, -32768, 32767)
        and _int_in(opaque, -2147483648, 2147483647)
        and _int_in(flag, -2147483648, 2147483647)
        and isinstance(lang, int)
    ):
        return _ref("encode_rocketmq_header")(cmd)
    remark = cmd.remark
    cdef bytes rb = None
    if remark:
        if type(remark) is not str:
            return _ref("encode_rocketmq_header")(cmd)
        rb = (<str>remark).encode("utf-8", "replace")
    ef = cmd.ext_fields
    cdef list parts = []
    cdef Py_ssize_t total = 13 + 4 + 4, ef_len = 0, n
    cdef bytes kp, vb
    if ef:
        if type(ef) is not dict:
            return _ref("encode_rocketmq_header")(cmd)
        for k, v in (<dict>ef).items():
            if k is None:
                continue
            if type(k) is not str:
                return _ref("encode_rocketmq_header")(cmd)
            p = PyDict_GetItem(_key_parts, k)
            if p != NULL:
                kp = <bytes><object>p
            else:
                kb = (<str>k).encode("utf-8", "replace")
                if len(kb) > 0x7FFF:
                    return _ref("encode_rocketmq_header")(cmd)
                kp = bytes((len(kb) >> 8, len(kb) & 0xFF)) + kb
                if len(_key_parts) < 1024:
                    _key_parts[k] = kp
            if v is None:
                vb = b""
            elif type(v) is str:
                vb = (<str>v).encode("utf-8", "replace")
            else:
                return _ref("encode_rocketmq_header")(cmd)
            parts.append(kp)
            parts.append(vb)
            ef_len += PyBytes_GET_SIZE(kp) + 4 + PyBytes_GET_SIZE(vb)
    if rb is not None:
        total += PyBytes_GET_SIZE(rb)
    total += ef_len
    cdef bytes out = PyBytes_FromStringAndSize(NULL, total)
    cdef unsigned char* o = <unsigned char*>PyBytes_AS_STRING(out)
    _put16(o, <uint16_t><int64_t>code)
    o[2] = <uint8_t>(<int64_t>(lang & 0xFF))
    _put16(o + 3, <uint16_t><int64_t>version)
    _put32(o + 5, <uint32_t><int64_t>opaque)
    _put32(o + 9, <uint32_t><int64_t>flag)
    cdef Py_ssize_t pos = 13, i
    if rb is None:
        _put32(o + pos, 0)
        pos += 4
    else:
        n = PyBytes_GET_SIZE(rb)
        _put32(o + pos, <uint32_t>n)
        memcpy(o + pos + 4, PyBytes_AS_STRING(rb), n)
        pos += 4 + n
    _put32(o + pos, <uint32_t>ef_len)
    pos += 4
    for i in range(0, len(parts), 2):
        kp = <bytes>parts[i]
        vb = <bytes>parts[i + 1]
        n = PyBytes_GET_SIZE(kp)
        memcpy(o + pos, PyBytes_AS_STRING(kp), n)
        pos += n
        n = PyBytes_GET_SIZE(vb)
        _put32(o + pos, <uint32_t>n)
        memcpy(o + pos + 4, PyBytes_AS_STRING(vb), n)
        pos += 4 + n
    return out


# --- pyrmq.store.message.message_properties_to_string ----------------------------------------------


def message_properties_to_string(properties):
    """Reference: pyrmq.store.message.message_properties_to_string ('k\\x01v\\x02' per pair)."""
    if not properties:
        return ""
    if type(properties) is not dict:
        return _ref("message_properties_to_string")(properties)
    cdef list parts = []
    for k, v in (<dict>properties).items():
        if v is None:
            continue
        if type(k) is not str or type(v) is not str:
            return _ref("message_properties_to_string")(properties)
        parts.append(k)
        parts.append(u"\x01")
        parts.append(v)
        parts.append(u"\x02")
    return u"".join(parts)



def string_to_message_properties(properties):
    """Reference: pyrmq.store.message.string_to_message_properties (pairs with an empty name or
    value dropped, a later duplicate wins)."""
    cdef dict result = {}
    cdef str s
    cdef Py_ssize_t n, start = 0, end, sep
    if type(properties) is not str:
        return _ref("string_to_message_properties")(properties)
    s = <str>properties
    n = len(s)
    if n == 0:
        return result
    while start <= n:
        end = s.find(u"\x02", start)
        if end < 0:
            end = n
        sep = s.find(u"\x01", start, end)
        if start < sep < end - 1:
            result[s[start:sep]] = s[sep + 1 : end]
        start = end + 1
    return result


# --- pyrmq.common.constants.validate_topic ---------------------------------------------------------


def validate_topic(topic):
    """Reference: pyrmq.common.constants.validate_topic. The common case, a name of 1 to 127
    characters from [%|a-zA-Z0-9_-], is valid whatever its prefix; the rest goes to the reference."""
    cdef Py_ssize_t n
    cdef Py_UCS4 c
    if type(topic) is not str:
        return _ref("validate_topic")(topic)
    n = len(<str>topic)
    if n == 0 or n > 127:
        return _ref("validate_topic")(topic)
    for c in <str>topic:
        if not (
            (u'a' <= c <= u'z') or (u'A' <= c <= u'Z') or (u'0' <= c <= u'9')
            or c == u'%' or c == u'|' or c == u'_' or c == u'-'
        ):
            return _ref("validate_topic")(topic)
    return None


# --- pyrmq.store.message.write_record --------------------------------------------------------------

cdef dict _record_headers = None


cdef inline bint _as_i64(object v, long long lo, long long hi, long long* out):
    cdef int overflow = 0
    if not isinstance(v, int):
        return False
    out[0] = PyLong_AsLongLongAndOverflow(v, &overflow)
    return overflow == 0 and lo <= out[0] <= hi


cdef inline void _put64(unsigned char* p, uint64_t v) noexcept nogil:
    _put32(p, <uint32_t>(v >> 32))
    _put32(p + 4, <uint32_t>v)


cdef inline bint _plain_bytes(object b):
    return type(b) is bytes or type(b) is bytearray


def write_record(buf, pos, header, total, version, body_crc, queue_id, flag, queue_offset, physical_offset,
                 sys_flag, born_timestamp, born_host, store_timestamp, store_host, reconsume_times,
                 prepared_transaction_offset, body, topic_part, properties, head=True):
    """Reference: pyrmq.store.message.write_record. Written here when every field is in range, the
    header is the standard one for the two hosts' lengths, and the record fits ``buf``; TOTALSIZE
    and MAGICCODE last, as the reference does. Anything else goes to the reference."""
    global _record_headers
    cdef long long v_pos = 0, v_total = 0, v_version = 0, v_crc = 0, v_qid = 0, v_flag = 0, v_qoff = 0
    cdef long long v_phy = 0, v_sys = 0, v_born = 0, v_store = 0, v_recon = 0, v_prep = 0
    cdef Py_buffer out, bb
    cdef Py_ssize_t nb, nt, np, hsize, end
    cdef unsigned char* o
    cdef const char* ps
    if _record_headers is None:
        from pyrmq.store import message

        _record_headers = message._RECORD_HEADERS
    ok = (
        type(born_host) is bytes and type(store_host) is bytes
        and _plain_bytes(topic_part) and _plain_bytes(properties)
        and (type(body) is bytes or type(body) is bytearray or type(body) is memoryview)
        and _as_i64(pos, 0, INT64_MAX, &v_pos)
        and _as_i64(total, -2147483648, 2147483647, &v_total)
        and _as_i64(version, -2147483648, 2147483647, &v_version)
        and _as_i64(body_crc, -2147483648, 2147483647, &v_crc)
        and _as_i64(queue_id, -2147483648, 2147483647, &v_qid)
        and _as_i64(flag, -2147483648, 2147483647, &v_flag)
        and _as_i64(queue_offset, INT64_MIN, INT64_MAX, &v_qoff)
        and _as_i64(physical_offset, INT64_MIN, INT64_MAX, &v_phy)
        and _as_i64(sys_flag, -2147483648, 2147483647, &v_sys)
        and _as_i64(born_timestamp, INT64_MIN, INT64_MAX, &v_born)
        and _as_i64(store_timestamp, INT64_MIN, INT64_MAX, &v_store)
        and _as_i64(reconsume_times, -2147483648, 2147483647, &v_recon)
        and _as_i64(prepared_transaction_offset, INT64_MIN, INT64_MAX, &v_prep)
    )
    if ok:
        p = PyDict_GetItem(_record_headers, (len(<bytes>born_host), len(<bytes>store_host)))
        ok = p != NULL and <object>p is header
    if ok and type(body) is memoryview:
        ok = (<object>body).c_contiguous and (<object>body).itemsize == 1 and (<object>body).ndim == 1
    nt = len(topic_part) if ok else 0
    np = len(properties) if ok else 0
    if not ok or np > 32767:
        return _ref("write_record")(buf, pos, header, total, version, body_crc, queue_id, flag, queue_offset,
                                    physical_offset, sys_flag, born_timestamp, born_host, store_timestamp,
                                    store_host, reconsume_times, prepared_transaction_offset, body, topic_part,
                                    properties, head)
    try:
        PyObject_GetBuffer(buf, &out, PyBUF_WRITABLE)
    except Exception:
        return _ref("write_record")(buf, pos, header, total, version, body_crc, queue_id, flag, queue_offset,
                                    physical_offset, sys_flag, born_timestamp, born_host, store_timestamp,
                                    store_host, reconsume_times, prepared_transaction_offset, body, topic_part,
                                    properties, head)
    PyObject_GetBuffer(body, &bb, PyBUF_SIMPLE)
    try:
        nb = bb.len
        hsize = 72 + len(<bytes>born_host) + len(<bytes>store_host)
        end = v_pos + hsize + nb + nt + 2 + np
        if end > out.len or nb > 0x7FFFFFFF:
            ok = False
        else:
            o = <unsigned char*>out.buf + v_pos
            _put32(o, 0)
            _put32(o + 4, 0)
            _put32(o + 8, <uint32_t>v_crc)
            _put32(o + 12, <uint32_t>v_qid)
            _put32(o + 16, <uint32_t>v_flag)
            _put64(o + 20, <uint64_t>v_qoff)
            _put64(o + 28, <uint64_t>v_phy)
            _put32(o + 36, <uint32_t>v_sys)
            _put64(o + 40, <uint64_t>v_born)
            o += 48
            memcpy(o, PyBytes_AS_STRING(born_host), len(<bytes>born_host))
            o += len(<bytes>born_host)
            _put64(o, <uint64_t>v_store)
            o += 8
            memcpy(o, PyBytes_AS_STRING(store_host), len(<bytes>store_host))
            o += len(<bytes>store_host)
            _put32(o, <uint32_t>v_recon)
            _put64(o + 4, <uint64_t>v_prep)
            _put32(o + 12, <uint32_t>nb)
            o += 16
            memcpy(o, bb.buf, nb)
            o += nb
            ps = PyBytes_AS_STRING(topic_part) if type(topic_part) is bytes else PyByteArray_AS_STRING(topic_part)
            memcpy(o, ps, nt)
            o += nt
            _put16(o, <uint16_t>np)
            o += 2
            ps = PyBytes_AS_STRING(properties) if type(properties) is bytes else PyByteArray_AS_STRING(properties)
            memcpy(o, ps, np)
            if head:
                o = <unsigned char*>out.buf + v_pos
                _put32(o, <uint32_t>v_total)
                _put32(o + 4, <uint32_t>v_version)
    finally:
        PyBuffer_Release(&bb)
        PyBuffer_Release(&out)
    if not ok:
        return _ref("write_record")(buf, pos, header, total, version, body_crc, queue_id, flag, queue_offset,
                                    physical_offset, sys_flag, born_timestamp, born_host, store_timestamp,
                                    store_host, reconsume_times, prepared_transaction_offset, body, topic_part,
                                    properties, head)


# --- pyrmq.spark.bulk.walk_records -----------------------------------------------------------------

cdef uint32_t _crc_table[8][256]
cdef bint _crc_ready = False


cdef void _crc_init() noexcept nogil:
    """CRC-32 (zlib's: reflected polynomial 0xEDB88320U) tables for slicing by 8 bytes."""
    cdef uint32_t c
    cdef int i, j, k
    for i in range(256):
        c = <uint32_t>i
        for j in range(8):
            c = (c >> 1) ^ (0xEDB88320U if c & 1 else 0)
        _crc_table[0][i] = c
    for i in range(256):
        c = _crc_table[0][i]
        for k in range(1, 8):
            c = (c >> 8) ^ _crc_table[0][c & 0xFF]
            _crc_table[k][i] = c


cdef inline uint32_t _le32(const unsigned char* p) noexcept nogil:
    return <uint32_t>p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef extern from *:
    """
    /* CRC-32 folding with carry-less multiplication (x86-64 PCLMULQDQ), own derivation:
       in the reflected bit order a 64x64 carry-less product of A and B is x*A*B, so folding a
       128-bit remainder X = L*x^64 + H forward by D bits is clmul(L, x^(63+D) mod P) xor
       clmul(H, x^(D-1) mod P), each constant a 32-bit remainder in reflected 64-bit form
       (computed by tools/bench/crc32_fold_constants.py). Four lanes fold 64 bytes a step, then
       they fold into one; the caller reduces the 16 bytes left (and the tail) with its table. */
    #include <stdint.h>
    #include <string.h>
    #if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    #include <immintrin.h>
    static int pyrmq_clmul_ok(void) {
        __builtin_cpu_init();
        return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse2");
    }
    __attribute__((target("pclmul,sse2")))
    static inline __m128i pyrmq_fold(__m128i x, __m128i k) {
        return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
    }
    __attribute__((target("pclmul,sse2")))
    static Py_ssize_t pyrmq_crc_fold(uint32_t reg, const unsigned char* p, Py_ssize_t n, unsigned char* out16) {
        const __m128i k512 = _mm_set_epi64x((long long)0xcad38e8f00000000ULL, (long long)0x653d982200000000ULL);
        const __m128i k384 = _mm_set_epi64x((long long)0x2a28386200000000ULL, (long long)0x69ccfc0d00000000ULL);
        const __m128i k256 = _mm_set_epi64x((long long)0x01b5fd1d00000000ULL, (long long)0x9570d49500000000ULL);
        const __m128i k128 = _mm_set_epi64x((long long)0x9ba54c6f00000000ULL, (long long)0x65673b4600000000ULL);
        __m128i x0, x1, x2, x3;
        Py_ssize_t done = 64;
        if (n < 64) return 0;
        x0 = _mm_xor_si128(_mm_loadu_si128((const __m128i*)p), _mm_cvtsi32_si128((int)reg));
        x1 = _mm_loadu_si128((const __m128i*)(p + 16));
        x2 = _mm_loadu_si128((const __m128i*)(p + 32));
        x3 = _mm_loadu_si128((const __m128i*)(p + 48));
        while (n - done >= 64) {
            const unsigned char* q = p + done;
            x0 = _mm_xor_si128(pyrmq_fold(x0, k512), _mm_loadu_si128((const __m128i*)q));
            x1 = _mm_xor_si128(pyrmq_fold(x1, k512), _mm_loadu_si128((const __m128i*)(q + 16)));
            x2 = _mm_xor_si128(pyrmq_fold(x2, k512), _mm_loadu_si128((const __m128i*)(q + 32)));
            x3 = _mm_xor_si128(pyrmq_fold(x3, k512), _mm_loadu_si128((const __m128i*)(q + 48)));
            done += 64;
        }
        x0 = _mm_xor_si128(_mm_xor_si128(pyrmq_fold(x0, k384), pyrmq_fold(x1, k256)),
                           _mm_xor_si128(pyrmq_fold(x2, k128), x3));
        while (n - done >= 16) {
            x0 = _mm_xor_si128(pyrmq_fold(x0, k128), _mm_loadu_si128((const __m128i*)(p + done)));
            done += 16;
        }
        _mm_storeu_si128((__m128i*)out16, x0);
        return done;
    }
    #else
    static int pyrmq_clmul_ok(void) { return 0; }
    static Py_ssize_t pyrmq_crc_fold(uint32_t reg, const unsigned char* p, Py_ssize_t n, unsigned char* out16) {
        (void)reg; (void)p; (void)n; (void)out16;
        return 0;
    }
    #endif
    """
    int pyrmq_clmul_ok() nogil
    Py_ssize_t pyrmq_crc_fold(uint32_t reg, const unsigned char* p, Py_ssize_t n, unsigned char* out16) nogil


cdef bint _clmul = False


cdef inline uint32_t _crc_table_step(uint32_t crc, const unsigned char* p, Py_ssize_t n) noexcept nogil:
    """The CRC register after n bytes (no initial or final inversion), eight bytes per step."""
    cdef uint32_t a, b
    while n >= 8:
        a = _le32(p) ^ crc
        b = _le32(p + 4)
        crc = (
            _crc_table[7][a & 0xFF] ^ _crc_table[6][(a >> 8) & 0xFF]
            ^ _crc_table[5][(a >> 16) & 0xFF] ^ _crc_table[4][a >> 24]
            ^ _crc_table[3][b & 0xFF] ^ _crc_table[2][(b >> 8) & 0xFF]
            ^ _crc_table[1][(b >> 16) & 0xFF] ^ _crc_table[0][b >> 24]
        )
        p += 8
        n -= 8
    while n > 0:
        crc = (crc >> 8) ^ _crc_table[0][(crc ^ p[0]) & 0xFF]
        p += 1
        n -= 1
    return crc


cdef uint32_t _crc32(const unsigned char* p, Py_ssize_t n) noexcept nogil:
    """zlib.crc32(p[:n]): folding with carry-less multiplication where the CPU has it (bodies of
    64 bytes and more), the table for the rest."""
    cdef uint32_t crc = 0xFFFFFFFFU
    cdef unsigned char rest[16]
    cdef Py_ssize_t done
    if _clmul and n >= 64:
        done = pyrmq_crc_fold(crc, p, n, rest)
        if done:
            crc = _crc_table_step(0, rest, 16)
            p += done
            n -= done
    return _crc_table_step(crc, p, n) ^ 0xFFFFFFFFU


def crc32(data):
    """zlib.crc32(data) of a bytes-like object (the table walk the record walk uses; tested
    against zlib)."""
    cdef Py_buffer v
    cdef uint32_t c
    if not _crc_ready:
        _crc_start()
    PyObject_GetBuffer(data, &v, PyBUF_SIMPLE)
    try:
        with nogil:
            c = _crc32(<const unsigned char*>v.buf, v.len)
    finally:
        PyBuffer_Release(&v)
    return c


cdef void _crc_start():
    global _crc_ready, _clmul
    _crc_init()
    _clmul = pyrmq_clmul_ok() != 0 and os.environ.get("PYRMQ_CRC_TABLE", "") in ("", "0")
    _crc_ready = True


def crc32_method():
    """Which CRC-32 the record walk uses: "clmul" (carry-less multiply folding) or "table"
    (PYRMQ_CRC_TABLE=1, or a CPU without PCLMULQDQ)."""
    if not _crc_ready:
        _crc_start()
    return "clmul" if _clmul else "table"


cdef bint _utf8_ok(const unsigned char* p, Py_ssize_t n) noexcept nogil:
    """True when p[:n] is what bytes.decode('utf-8') accepts (no overlong forms, no surrogates,
    nothing above U+10FFFF)."""
    cdef Py_ssize_t i = 0
    cdef unsigned char c, d
    while i < n:
        c = p[i]
        if c < 0x80:
            i += 1
            continue
        if 0xC2 <= c <= 0xDF:
            if i + 1 >= n or (p[i + 1] & 0xC0) != 0x80:
                return False
            i += 2
        elif 0xE0 <= c <= 0xEF:
            if i + 2 >= n:
                return False
            d = p[i + 1]
            if c == 0xE0:
                if not (0xA0 <= d <= 0xBF):
                    return False
            elif c == 0xED:
                if not (0x80 <= d <= 0x9F):
                    return False
            elif (d & 0xC0) != 0x80:
                return False
            if (p[i + 2] & 0xC0) != 0x80:
                return False
            i += 3
        elif 0xF0 <= c <= 0xF4:
            if i + 3 >= n:
                return False
            d = p[i + 1]
            if c == 0xF0:
                if not (0x90 <= d <= 0xBF):
                    return False
            elif c == 0xF4:
                if not (0x80 <= d <= 0x8F):
                    return False
            elif (d & 0xC0) != 0x80:
                return False
            if (p[i + 2] & 0xC0) != 0x80 or (p[i + 3] & 0xC0) != 0x80:
                return False
            i += 4
        else:
            return False
    return True


cdef Py_ssize_t _walk(const unsigned char* b, Py_ssize_t pos, Py_ssize_t stop, Py_ssize_t limit,
                      bint check_crc, int64_t* out, Py_ssize_t cap, Py_ssize_t* n_out) noexcept nogil:
    """The record-boundary walk of walk_records, on raw memory; returns where it stopped."""
    cdef Py_ssize_t n = 0, e, q, topic_at, body_at
    cdef int32_t total, magic, sys_flag, body_len, topic_len, props_len
    while pos < stop and pos + 8 <= limit and n < cap:
        total = _i32(b + pos)
        magic = _i32(b + pos + 4)
        if magic != <int32_t>0xDAA320A7U and magic != <int32_t>0xDAA320ABU:
            break
        if total < 91 or total > limit - pos:
            break
        e = pos + total
        sys_flag = _i32(b + pos + 36)
        q = pos + 48 + (20 if sys_flag & 0x10 else 8) + 8 + (20 if sys_flag & 0x20 else 8) + 16
        if q > e:
            break
        body_len = _i32(b + q - 4)
        if body_len < 0 or body_len > e - q:
            break
        body_at = q
        q += body_len
        if magic == <int32_t>0xDAA320ABU:
            if q + 2 > e:
                break
            topic_len = _i16(b + q)
            q += 2
        else:
            if q + 1 > e:
                break
            topic_len = <signed char>b[q]
            q += 1
        if topic_len < 0 or topic_len > e - q:
            break
        topic_at = q
        q += topic_len
        if q + 2 > e:
            break
        props_len = _i16(b + q)
        if props_len < 0 or q + 2 + props_len != e:
            break
        if not _utf8_ok(b + topic_at, topic_len):
            break
        if check_crc and (_crc32(b + body_at, body_len) & 0x7FFFFFFFU) != <uint32_t>_i32(b + pos + 8):
            break
        out[n] = pos
        n += 1
        pos = e
    n_out[0] = n
    return pos


def walk_records(buf, pos, stop, limit, check_crc, out):
    """Reference: pyrmq.spark.bulk.walk_records. The same walk over the raw bytes, without the
    GIL: each record's structure, topic UTF-8 and (when asked) BODYCRC checked in one pass.
    Arguments out of the common range go to the reference."""
    cdef Py_buffer bv, ov
    cdef Py_ssize_t c_pos, c_stop, c_limit, n = 0, end
    cdef bint crc = bool(check_crc)
    if not (type(pos) is int and type(stop) is int and type(limit) is int):
        return _ref("walk_records")(buf, pos, stop, limit, check_crc, out)
    c_pos, c_stop, c_limit = pos, stop, limit
    try:
        PyObject_GetBuffer(buf, &bv, PyBUF_SIMPLE)
    except Exception:
        return _ref("walk_records")(buf, pos, stop, limit, check_crc, out)
    try:
        PyObject_GetBuffer(out, &ov, PyBUF_WRITABLE | PyBUF_FORMAT)
    except Exception:
        PyBuffer_Release(&bv)
        return _ref("walk_records")(buf, pos, stop, limit, check_crc, out)
    try:
        if c_pos < 0 or c_limit > bv.len or ov.itemsize != 8 or ov.format == NULL or ov.format[0] not in b"lq":
            ok = False
        else:
            ok = True
            if crc and not _crc_ready:
                _crc_start()
            with nogil:
                end = _walk(<const unsigned char*>bv.buf, c_pos, c_stop, c_limit, crc, <int64_t*>ov.buf,
                            ov.len // 8, &n)
    finally:
        PyBuffer_Release(&ov)
        PyBuffer_Release(&bv)
    if not ok:
        return _ref("walk_records")(buf, pos, stop, limit, check_crc, out)
    return n, end


# --- pyrmq.spark.bulk.record_fields, copy_ranges ---------------------------------------------------

cdef inline int64_t _i64(const unsigned char* p) noexcept nogil:
    return <int64_t>((<uint64_t>_u32(p) << 32) | <uint64_t>_u32(p + 4))


cdef bint _int64_array(Py_buffer* v) noexcept:
    return v.itemsize == 8 and v.format != NULL and (v.format[0] == b'l' or v.format[0] == b'q')


cdef bint _fields(const unsigned char* b, Py_ssize_t blen, const int64_t* s, Py_ssize_t n, Py_ssize_t limit,
                  int64_t* o) noexcept nogil:
    """The rows of record_fields for records that are whole and well-formed; False at the first
    one that is not (the caller hands the batch to the reference)."""
    cdef Py_ssize_t i, p, e, q, born_len, store_len, body_pos, topic_pos
    cdef int32_t total, magic, sys_flag, body_len, topic_len, props_len
    if limit > blen:
        return False
    for i in range(n):
        p = s[i]
        if p < 0 or p + 8 > limit:
            return False
        total = _i32(b + p)
        magic = _i32(b + p + 4)
        if (magic != <int32_t>0xDAA320A7U and magic != <int32_t>0xDAA320ABU) or total < 91 or total > limit - p:
            return False
        e = p + total
        sys_flag = _i32(b + p + 36)
        born_len = 20 if sys_flag & 0x10 else 8
        store_len = 20 if sys_flag & 0x20 else 8
        q = p + 48 + born_len + 8 + store_len
        body_pos = q + 16
        if body_pos > e:
            return False
        body_len = _i32(b + q + 12)
        if body_len < 0 or body_len > e - body_pos:
            return False
        q = body_pos + body_len
        if magic == <int32_t>0xDAA320ABU:
            if q + 2 > e:
                return False
            topic_len = _i16(b + q)
            topic_pos = q + 2
        else:
            if q + 1 > e:
                return False
            topic_len = <signed char>b[q]
            topic_pos = q + 1
        if topic_len < 0 or topic_len > e - topic_pos - 2:
            return False
        props_len = _i16(b + topic_pos + topic_len)
        if props_len < 0 or topic_pos + topic_len + 2 + props_len != e:
            return False
        o[i] = total
        o[n + i] = magic
        o[2 * n + i] = _i32(b + p + 8)
        o[3 * n + i] = _i32(b + p + 12)
        o[4 * n + i] = _i32(b + p + 16)
        o[5 * n + i] = _i64(b + p + 20)
        o[6 * n + i] = _i64(b + p + 28)
        o[7 * n + i] = sys_flag
        o[8 * n + i] = _i64(b + p + 40)
        o[9 * n + i] = _i64(b + p + 48 + born_len)
        o[10 * n + i] = _i32(b + body_pos - 16)
        o[11 * n + i] = _i64(b + body_pos - 12)
        o[12 * n + i] = born_len
        o[13 * n + i] = p + 48 + born_len + 8
        o[14 * n + i] = store_len
        o[15 * n + i] = body_pos
        o[16 * n + i] = body_len
        o[17 * n + i] = topic_pos
        o[18 * n + i] = topic_len
        o[19 * n + i] = topic_pos + topic_len + 2
        o[20 * n + i] = props_len
    return True


def record_fields(buf, starts, limit, out):
    """Reference: pyrmq.spark.bulk.record_fields. One pass over the records (they are whole and
    well-formed when the compiled walk found them); any other batch goes to the reference."""
    cdef Py_buffer bv, sv, ov
    cdef Py_ssize_t c_limit, n
    cdef bint ok = False
    if type(limit) is not int:
        return _ref("record_fields")(buf, starts, limit, out)
    c_limit = limit
    PyObject_GetBuffer(buf, &bv, PyBUF_SIMPLE)
    try:
        PyObject_GetBuffer(starts, &sv, PyBUF_FORMAT)
        try:
            PyObject_GetBuffer(out, &ov, PyBUF_WRITABLE | PyBUF_FORMAT)
            try:
                n = sv.len // 8
                if _int64_array(&sv) and _int64_array(&ov) and ov.len == 21 * 8 * n:
                    with nogil:
                        ok = _fields(<const unsigned char*>bv.buf, bv.len, <const int64_t*>sv.buf, n, c_limit,
                                     <int64_t*>ov.buf)
            finally:
                PyBuffer_Release(&ov)
        finally:
            PyBuffer_Release(&sv)
    finally:
        PyBuffer_Release(&bv)
    if not ok:
        return _ref("record_fields")(buf, starts, limit, out)
    return None


def copy_ranges(buf, pos, length, out):
    """Reference: pyrmq.spark.bulk.copy_ranges. memcpy per range, without the GIL, when every
    range is inside ``buf`` and ``out`` is exactly their total; anything else goes to the reference."""
    cdef Py_buffer bv, pv, lv, ov
    cdef Py_ssize_t i, n, at = 0
    cdef const int64_t* ps
    cdef const int64_t* ls
    cdef bint ok = False
    PyObject_GetBuffer(buf, &bv, PyBUF_SIMPLE)
    try:
        PyObject_GetBuffer(pos, &pv, PyBUF_FORMAT)
        try:
            PyObject_GetBuffer(length, &lv, PyBUF_FORMAT)
            try:
                PyObject_GetBuffer(out, &ov, PyBUF_WRITABLE)
                try:
                    if _int64_array(&pv) and _int64_array(&lv) and pv.len == lv.len:
                        n = pv.len // 8
                        ps = <const int64_t*>pv.buf
                        ls = <const int64_t*>lv.buf
                        with nogil:
                            ok = True
                            for i in range(n):
                                if ps[i] < 0 or ls[i] < 0 or ls[i] > bv.len - ps[i] or ls[i] > ov.len - at:
                                    ok = False
                                    break
                                at += ls[i]
                            if ok and at == ov.len:
                                at = 0
                                for i in range(n):
                                    memcpy(<unsigned char*>ov.buf + at, <const unsigned char*>bv.buf + ps[i], ls[i])
                                    at += ls[i]
                            else:
                                ok = False
                finally:
                    PyBuffer_Release(&ov)
            finally:
                PyBuffer_Release(&lv)
        finally:
            PyBuffer_Release(&pv)
    finally:
        PyBuffer_Release(&bv)
    if not ok:
        return _ref("copy_ranges")(buf, pos, length, out)
    return None
