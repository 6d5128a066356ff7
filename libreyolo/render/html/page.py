"""The page shell: one HTML document with its stylesheet and its one small script inline.

The palette is Okabe and Ito's (distinguishable with every common colour-vision deficiency);
fonts are the system's own (no web font); `@media print` drops the contents line and keeps
charts and tables whole. The script only makes tables sortable: with JavaScript off the page
shows everything, in the order the analysis gave.

Pure: strings in, strings out.
"""

from __future__ import annotations

from collections.abc import Sequence

from libreyolo.render.html.markup import esc, input_attr

GENERATOR = "libreyolo profile report"

CSS = """
:root{--fg:#1d2330;--muted:#5b6475;--line:#d9dde5;--bg:#ffffff;--panel:#f6f7f9;
--accent:#0072B2;--warn:#b35900;--warnbg:#fff4e5;--bad:#a8321c;--badbg:#fdecea;--ok:#00704f}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,
sans-serif;color:var(--fg);background:var(--bg)}
header.top{background:#1d2330;color:#fff;padding:18px 28px 14px}
header.top h1{margin:0;font-size:20px;font-weight:600}
header.top .meta{color:#c6ccd8;font-size:13px;margin-top:4px}
nav.toc{position:sticky;top:0;z-index:2;background:#fff;border-bottom:1px solid var(--line);
padding:6px 28px;font-size:13px;white-space:nowrap;overflow-x:auto}
nav.toc a{color:var(--accent);text-decoration:none;margin-right:14px}
main{max-width:1180px;margin:0 auto;padding:8px 28px 40px}
main a{color:var(--accent)}
section{margin-top:26px}
h2{font-size:17px;margin:0 0 8px;padding-bottom:4px;border-bottom:1px solid var(--line)}
h3{font-size:14px;margin:14px 0 6px}
p.intro{color:var(--muted);margin:0 0 10px}
.banner{padding:9px 14px;border-radius:6px;margin:12px 0 0;font-weight:500}
.banner.warn{background:var(--warnbg);color:var(--warn);border:1px solid #f3c58a}
.banner.bad{background:var(--badbg);color:var(--bad);border:1px solid #f0b2a6}
.verdict{border-left:6px solid var(--accent);background:var(--panel);padding:12px 16px;
border-radius:0 6px 6px 0}
.verdict.contended,.verdict.memory-pressure{border-left-color:var(--bad)}
.verdict .bound{font-size:18px;font-weight:700;letter-spacing:.02em}
.verdict .why{margin:4px 0 0}
.verdict ul{margin:6px 0 0;padding-left:20px}
.verdict .quiet{color:var(--muted);margin-top:6px}
.cards{margin-top:12px;display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:10px}
.card{background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:8px 12px}
.card .label{color:var(--muted);font-size:12px}
.card .value{font-size:20px;font-weight:600;font-variant-numeric:tabular-nums}
.card .sub{color:var(--muted);font-size:12px}
.unit{color:var(--muted);font-size:.8em;margin-left:2px}
.na{color:var(--muted)}
dl.facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(210px,1fr));gap:2px 18px;
margin:0}
dl.facts div.wide{grid-column:span 2}
dl.facts div{display:flex;gap:8px;border-bottom:1px dotted var(--line);padding:2px 0}
dl.facts dt{color:var(--muted);min-width:84px}
dl.facts dd{margin:0;overflow-wrap:anywhere}
p.paths{color:var(--muted);margin:6px 0 0;overflow-wrap:anywhere}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:13px;font-variant-numeric:tabular-nums}
caption{text-align:left;color:var(--muted);padding:2px 0 4px}
th,td{padding:4px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{background:var(--panel);font-weight:600;white-space:nowrap}
td.num,th.num{text-align:right;white-space:nowrap}
table.sortable th{cursor:pointer}
table.sortable th[aria-sort=ascending]::after{content:" \\25B2";font-size:9px}
table.sortable th[aria-sort=descending]::after{content:" \\25BC";font-size:9px}
tr.best td{background:#e6f3ee}
tr.bad td{background:var(--badbg)}
.tag{display:inline-block;font-size:11px;padding:0 5px;border-radius:3px;background:#e8ecf2;
color:var(--muted);margin-left:4px}
.tag.tc{background:#dcebf7;color:#0b4f80}
.tag.ok{background:#e6f3ee;color:var(--ok)}
.tag.bad{background:var(--badbg);color:var(--bad)}
.grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:18px}
figure{margin:0}
figure.split{margin-top:14px}
figcaption{color:var(--muted);font-size:12px;margin-top:2px}
svg{display:block;width:100%;height:auto;font-family:inherit}
svg text{font-size:11px;fill:#3b4352}
svg .axis line,svg .axis path{stroke:#9aa3b2}
svg .grid line{stroke:#e6e9ef}
svg .mark:hover{opacity:.8}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;color:var(--muted);margin:4px 0}
.legend i{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:5px;
vertical-align:-1px}
ul.notes{margin:0;padding-left:20px}
ul.notes li{margin:2px 0}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
pre{background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:8px 10px;
overflow-x:auto}
details{border:1px solid var(--line);border-radius:6px;padding:6px 12px;margin:8px 0}
details>summary{cursor:pointer;font-weight:600}
footer{color:var(--muted);font-size:12px;margin-top:34px;border-top:1px solid var(--line);
padding-top:8px}
/* comparison page */
.dir.better{color:var(--ok);font-weight:600}
.dir.worse{color:var(--bad);font-weight:600}
.dir.ns{font-weight:400;opacity:.8}
.dir.same{color:var(--muted)}
.sig{color:var(--muted);font-size:12px;margin-top:2px;white-space:normal}
.side{display:inline-block;padding:0 8px;border-radius:3px;color:#fff;font-size:12px;
text-transform:uppercase;letter-spacing:.04em}
.side.before{background:#6b7280}
.side.after{background:#0072B2}
.status{white-space:nowrap}
.status.new{color:var(--ok)}
.status.gone{color:var(--bad)}
td code{overflow-wrap:anywhere}
.banner.info{background:var(--panel);color:var(--fg);border:1px solid var(--line)}
p.gate.bad{color:var(--bad)}
p.gate.ok{color:var(--ok)}
@media print{nav.toc{display:none}details::details-content{content-visibility:visible}
body{font-size:12px}header.top{background:none;color:#000;
padding:0}header.top .meta{color:#333}section,figure,tr,.card{break-inside:avoid}
.scroll{overflow:visible}}
"""

# Sorting: click a header to sort by the cells' data-key (numbers as numbers, largest first),
# again to reverse; and printing opens every collapsed section. No globals.
SCRIPT = """
(function(){"use strict";
function keyOf(td){var k=td.getAttribute("data-key");return k===null?td.textContent:k;}
function sortBy(table,col,th){
var body=table.tBodies[0],rows=Array.prototype.slice.call(body.rows);
var dir=th.getAttribute("aria-sort")==="descending"?1:-1;
var numeric=th.classList.contains("num");
rows.sort(function(a,b){var x=keyOf(a.cells[col]),y=keyOf(b.cells[col]);
if(numeric){var fx=parseFloat(x),fy=parseFloat(y);
if(isNaN(fx))fx=-Infinity;if(isNaN(fy))fy=-Infinity;return dir*(fx-fy);}
return dir*String(x).localeCompare(String(y));});
Array.prototype.forEach.call(table.tHead.rows[0].cells,function(c){c.removeAttribute("aria-sort");});
th.setAttribute("aria-sort",dir===1?"ascending":"descending");
rows.forEach(function(r){body.appendChild(r);});}
window.addEventListener("beforeprint",function(){
document.querySelectorAll("details").forEach(function(d){d.open=true;});});
document.querySelectorAll("table.sortable").forEach(function(table){
Array.prototype.forEach.call(table.tHead.rows[0].cells,function(th,col){
th.addEventListener("click",function(){sortBy(table,col,th);});});});
})();
"""


def document(
    *,
    title: str,
    subtitle: str,
    toc: Sequence[tuple[str, str]],
    body: str,
    footer: str,
    inputs: Sequence[str],
) -> str:
    """The whole page: `toc` is (anchor, label) for the contents line, `inputs` the files its
    numbers come from."""
    links = "".join(f'<a href="#{esc(anchor)}">{esc(label)}</a>' for anchor, label in toc)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="generator" content="{esc(GENERATOR)}">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f'<header class="top"><h1>{esc(title)}</h1><div class="meta">{subtitle}</div></header>'
        f'<nav class="toc">{links}</nav><main {input_attr(inputs)}>{body}'
        f"<footer>{footer}</footer></main><script>{SCRIPT}</script></body></html>\n"
    )
