package io.pyrmq.compat.golden;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.apache.rocketmq.remoting.protocol.LanguageCode;

/**
 * Annotated hex (tests/golden format): hex bytes separated by spaces, one field per line,
 * '#' starts a comment that runs to the end of the line. Parses the frame with its own walk
 * of the layout so every line names the field it holds.
 */
final class Annotate {
    private static final int ROW = 16;

    private final StringBuilder out = new StringBuilder();
    private final ByteBuffer buf;

    private Annotate(byte[] frame) {
        this.buf = ByteBuffer.wrap(frame);
    }

    static String annotate(String file, String note, byte[] frame) {
        Annotate a = new Annotate(frame);
        a.out.append("# ").append(file).append(": ").append(note).append('\n');
        a.out.append("# source: ").append(GenGolden.SOURCE)
            .append(" (compat/java-tests/gen-golden.sh); fastEncodeHeader + body, as NettyEncoder writes it\n");
        a.out.append("# whole frame: ").append(frame.length).append(" bytes, sha256 ")
            .append(GenGolden.sha256(frame)).append('\n');
        a.frame();
        return a.out.toString();
    }

    private void frame() {
        int frameLength = buf.getInt(0);
        field(4, "frame length = " + frameLength + " (bytes after this field)");
        int word = buf.getInt(4);
        int type = (word >>> 24) & 0xff;
        int headerLength = word & 0xffffff;
        field(4, "header word: serialize type " + type + (type == 0 ? " (JSON)" : " (ROCKETMQ)")
            + ", header length " + headerLength);
        int headerEnd = 8 + headerLength;
        if (type == 0) {
            rows(headerLength, "JSON header");
        } else {
            rocketmqHeader(headerEnd);
        }
        int bodyLength = buf.limit() - headerEnd;
        if (bodyLength == 0) {
            out.append("# body: none (length 0)\n");
        } else {
            rows(bodyLength, "body");
        }
    }

    private void rocketmqHeader(int headerEnd) {
        field(2, "code = " + buf.getShort(buf.position()));
        byte language = buf.get(buf.position());
        LanguageCode name = LanguageCode.valueOf(language);
        field(1, "language = " + language + (name == null ? "" : " (" + name + ")"));
        field(2, "version = " + buf.getShort(buf.position()));
        int opaque = buf.getInt(buf.position());
        field(4, "opaque = " + opaque + String.format(" (0x%08x)", opaque));
        field(4, "flag = " + buf.getInt(buf.position()));
        int remarkLength = buf.getInt(buf.position());
        field(4, "remark length = " + remarkLength + (remarkLength == 0 ? " (null remark)" : ""));
        if (remarkLength > 0) {
            rows(remarkLength, "remark");
        }
        int extLength = buf.getInt(buf.position());
        field(4, "extFields length = " + extLength + (extLength == 0 ? " (no extFields)" : ""));
        while (buf.position() < headerEnd) {
            int keyLength = buf.getShort(buf.position());
            field(2, "key length = " + keyLength);
            if (keyLength > 0) {
                rows(keyLength, "key");
            }
            int valueLength = buf.getInt(buf.position());
            field(4, "value length = " + valueLength);
            if (valueLength > 0) {
                rows(valueLength, "value");
            }
        }
    }

    /** One field: its bytes on one line, then its comment. */
    private void field(int n, String comment) {
        hex(n);
        out.append(" # ").append(comment).append('\n');
    }

    /** A byte string over rows of 16; the first row carries the decoded text. */
    private void rows(int n, String what) {
        byte[] b = new byte[n];
        buf.duplicate().get(b);
        String text = printable(b);
        int done = 0;
        while (done < n) {
            int k = Math.min(ROW, n - done);
            hex(k);
            if (done == 0) {
                out.append(" # ").append(what).append(" (").append(n).append(" bytes)");
                if (text != null) {
                    out.append(": ").append(text);
                }
            }
            out.append('\n');
            done += k;
        }
    }

    private void hex(int n) {
        for (int i = 0; i < n; i++) {
            if (i > 0) {
                out.append(' ');
            }
            out.append(String.format("%02x", buf.get() & 0xff));
        }
    }

    /** UTF-8 text with control characters escaped, or null when the bytes are not text. */
    private static String printable(byte[] b) {
        String s = new String(b, StandardCharsets.UTF_8);
        if (s.contains("\ufffd")) {
            return null;
        }
        StringBuilder sb = new StringBuilder();
        int controls = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x20 || c == 0x7f) {
                sb.append(String.format("\\u%04x", (int) c));
                controls++;
            } else {
                sb.append(c);
            }
        }
        if (controls > s.length() / 4) {
            return null;
        }
        return sb.toString();
    }
}
