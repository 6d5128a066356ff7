"""The report pages: one self-contained HTML file each (inline CSS, inline SVG, a little inline
JavaScript that only adds sorting), drawn from the same analysis results the text and JSON views
render. Stdlib only; nothing here loads anything from outside the page."""
