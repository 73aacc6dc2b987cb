"""The report page's parts every page shares (report/html.py, eventsreport.py): its CSS and the table, key/value
and value helpers; cells are escaped here."""

from __future__ import annotations

from html import escape

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1240px;padding:0 16px;
color:#1b1b1b}
h1{font-size:24px;margin:24px 0 4px}
h2{font-size:20px;border-bottom:2px solid #1f77b4;padding-bottom:3px;margin-top:36px}
h3{font-size:16px;margin:22px 0 8px}h4{font-size:14px;margin:14px 0 6px}
table{border-collapse:collapse;margin:6px 0 12px;font-variant-numeric:tabular-nums;font-size:13px}
th,td{border:1px solid #d0d7de;padding:3px 6px;text-align:right;vertical-align:top;white-space:nowrap}
th{background:#f3f6f9;font-weight:600}td.l,th.l{text-align:left}
tr.fail td{background:#fdecec}tr.pass td{background:#eef8ee}tr.risk td{background:#fff7e0}
.verdict{font-size:1.1em}.verdict.pass{color:#1a7f37}.verdict.fail{color:#b42318}.verdict.inconclusive{color:#b54708}
.meta{color:#555}.kv td{text-align:left;white-space:normal;max-width:440px;overflow-wrap:anywhere}
.kv td:first-child{color:#444;white-space:nowrap}td.why{white-space:normal;text-align:left}
.kv td.set{font-weight:600}.grid{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}
.warn{background:#fff7e0;border-left:4px solid #f0a000;padding:6px 10px;margin:4px 0}
.ok{background:#eef8ee;border-left:4px solid #2ca02c;padding:6px 10px}
.fig svg{max-width:100%;height:auto}details{margin:4px 0 10px}summary{cursor:pointer;color:#1f5f99}
code{background:#f3f6f9;padding:0 3px;white-space:pre-wrap}.tw{overflow-x:auto;max-width:100%}
table.results td:last-child{min-width:10em}
table.results td:last-child,table.ledger td:last-child,table.ledger th:last-child{white-space:normal;text-align:left}
ul.fix{margin:2px 0 8px}nav a{margin-right:12px}
table.series td:nth-child(3),table.series td:nth-child(7){white-space:normal;min-width:12em;max-width:28em}
"""


def _table(headers: list[str], rows: list[list[str]], cls: str = "", row_classes: list[str] | None = None,
           left: int = 1) -> str:
    """An HTML table; cells are escaped here; the first `left` columns are left-aligned."""
    head = "".join(f'<th class="l">{escape(h)}</th>' if i < left else f"<th>{escape(h)}</th>"
                   for i, h in enumerate(headers))
    body = []
    for n, row in enumerate(rows):
        rc = f' class="{row_classes[n]}"' if row_classes and row_classes[n] else ""
        cells = "".join(f'<td class="l">{escape(c)}</td>' if i < left else f"<td>{escape(c)}</td>"
                        for i, c in enumerate(row))
        body.append(f"<tr{rc}>{cells}</tr>")
    return (f'<div class="tw"><table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody>'
            "</table></div>")


def _kv(title: str, items: list[tuple[str, str, bool, str]]) -> str:
    """A key/value table; bold values are the ones set away from their default; hover text explains a key."""
    rows = "".join(f'<tr><td title="{escape(tip)}">{escape(k)}</td><td class="{"set" if bold else ""}">'
                   f"{escape(v)}</td></tr>" for k, v, bold, tip in items)
    return f'<div><h4>{escape(title)}</h4><table class="kv"><tbody>{rows}</tbody></table></div>'


def _fmt(v: object) -> str:
    """A setting's or host fact's value as text: floats short, lists and objects joined, nothing as '-'."""
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, list | tuple):
        return ", ".join(map(str, v)) or "-"
    if isinstance(v, dict):
        return ", ".join(f"{k}: {_fmt(x)}" for k, x in v.items()) or "-"
    return "-" if v in ("", None) else str(v)
