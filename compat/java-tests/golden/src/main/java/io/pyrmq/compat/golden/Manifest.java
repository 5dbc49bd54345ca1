package io.pyrmq.compat.golden;

import com.alibaba.fastjson2.JSON;
import com.alibaba.fastjson2.JSONReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.Map;
import java.util.TreeMap;

/**
 * tests/golden/MANIFEST.json: {"files": {"<path under tests/golden>": {...}}}, keys sorted,
 * two-space indent. Entries under our prefix are replaced; all others are kept.
 */
final class Manifest {

    @SuppressWarnings("unchecked")
    static void merge(Path file, String prefix, Map<String, Object> ours) throws Exception {
        Map<String, Object> files = new TreeMap<>();
        if (Files.exists(file)) {
            String old = new String(Files.readAllBytes(file), StandardCharsets.UTF_8);
            Map<String, Object> root = (Map<String, Object>) JSON.parseObject(old, Map.class,
                JSONReader.Feature.UseBigDecimalForDoubles);
            Object existing = root.get("files");
            if (existing instanceof Map) {
                for (Map.Entry<String, Object> e : ((Map<String, Object>) existing).entrySet()) {
                    if (!e.getKey().startsWith(prefix)) {
                        files.put(e.getKey(), e.getValue());
                    }
                }
            }
        }
        files.putAll(ours);
        StringBuilder sb = new StringBuilder();
        sb.append("{\n  \"files\": ");
        write(sb, files, 1);
        sb.append("\n}\n");
        Files.write(file, sb.toString().getBytes(StandardCharsets.UTF_8));
    }

    @SuppressWarnings("unchecked")
    private static void write(StringBuilder sb, Object v, int depth) {
        if (v == null) {
            sb.append("null");
        } else if (v instanceof Map) {
            Map<String, Object> m = (Map<String, Object>) v;
            if (m.isEmpty()) {
                sb.append("{}");
                return;
            }
            sb.append("{\n");
            int i = 0;
            for (Map.Entry<String, Object> e : m.entrySet()) {
                indent(sb, depth + 1);
                string(sb, e.getKey());
                sb.append(": ");
                write(sb, e.getValue(), depth + 1);
                sb.append(++i < m.size() ? ",\n" : "\n");
            }
            indent(sb, depth);
            sb.append('}');
        } else if (v instanceof Collection) {
            Collection<Object> c = (Collection<Object>) v;
            sb.append('[');
            int i = 0;
            for (Object o : c) {
                write(sb, o, depth + 1);
                if (++i < c.size()) {
                    sb.append(", ");
                }
            }
            sb.append(']');
        } else if (v instanceof String) {
            string(sb, (String) v);
        } else {
            sb.append(v);
        }
    }

    private static void indent(StringBuilder sb, int depth) {
        for (int i = 0; i < depth; i++) {
            sb.append("  ");
        }
    }

    private static void string(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': sb.append("\\\""); break;
                case '\\': sb.append("\\\\"); break;
                case '\n': sb.append("\\n"); break;
                case '\r': sb.append("\\r"); break;
                case '\t': sb.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
            }
        }
        sb.append('"');
    }

    private Manifest() {
    }
}
