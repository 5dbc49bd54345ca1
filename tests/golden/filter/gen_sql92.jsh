// Regenerate sql92_java_5.5.0.json with the official rocketmq-filter 5.5.0 (SqlFilter + SelectorParser):
//   CP=$(ls ~/.m2/repository/org/apache/rocketmq/rocketmq-filter/5.5.0/*.jar):$(ls ~/.m2/repository/com/google/guava/guava/32.0.1-jre/*.jar)
//   (cd tests/golden/filter && jshell --class-path "$CP" -q gen_sql92.jsh > sql92_java_5.5.0.json)
// Output: one JSON object per line {"sql": ..., "parse": null|"<error>", "results": ["true"|"false"|"null"|"error", ...]}
import java.nio.file.*;
import java.util.*;
import org.apache.rocketmq.filter.expression.*;
import org.apache.rocketmq.filter.parser.SelectorParser;
String q(String s) { StringBuilder b = new StringBuilder("\""); for (char c : s.toCharArray()) { if (c == '"' || c == '\\') b.append('\\').append(c); else if (c < 0x20) b.append(String.format("\\u%04x", (int) c)); else b.append(c); } return b.append('"').toString(); }
List<Map<String, String>> props = new ArrayList<>();
{
  String text = new String(Files.readAllBytes(Paths.get("sql92_props.json")), "UTF-8");
  java.util.regex.Matcher mo = java.util.regex.Pattern.compile("\\{([^}]*)\\}").matcher(text);
  while (mo.find()) {
    Map<String, String> m = new HashMap<>();
    java.util.regex.Matcher kv = java.util.regex.Pattern.compile("\"([^\"]*)\"\\s*:\\s*\"([^\"]*)\"").matcher(mo.group(1));
    while (kv.find()) m.put(kv.group(1), kv.group(2));
    props.add(m);
  }
}
List<String> lines = Files.readAllLines(Paths.get("sql92_cases.txt"));
StringBuilder out = new StringBuilder();
for (int li = 0; li < lines.size(); li++) {
  String sql = lines.get(li);
  if (sql.startsWith("#")) continue;
  // a line ending in " -- trailing" continues on the next line (a line comment needs its newline)
  if (sql.endsWith("-- trailing") && li + 1 < lines.size()) { sql = sql + "\n" + lines.get(++li); }
  String parse = null; BooleanExpression e = null;
  try { e = SelectorParser.parse(sql); } catch (Throwable t) { parse = String.valueOf(t.getMessage()); }
  List<String> res = new ArrayList<>();
  if (e != null) for (Map<String, String> p : props) {
    final Map<String, String> pp = p;
    EvaluationContext ctx = new EvaluationContext() { public Object get(String n) { return pp.get(n); } public Map<String, Object> keyValues() { return new HashMap<>(pp); } };
    String r; try { Object v = e.evaluate(ctx); r = v == null ? "null" : (v instanceof Boolean ? v.toString() : "other:" + v); } catch (Throwable t) { r = "error"; }
    res.add(q(r));
  }
  out.append("{\"sql\": ").append(q(sql)).append(", \"parse\": ").append(parse == null ? "null" : q(parse)).append(", \"results\": ").append(res).append("}\n");
}
System.out.print(out);
/exit
