/* Generated from c_src/writers/assets/svg_flamegraph.css by scripts/embed_text.sh: do not edit. */
static const char BS_ASSET_svg_flamegraph_css[] =
    "/* svg_flamegraph.css - the look of beamspy's SVG flame graphs (see svg_document.c). */\n"
    "text { font-family: Verdana, \"DejaVu Sans\", sans-serif; font-size: 12px; fill: rgb(0,0,0); }\n"
    "#title { text-anchor: middle; font-size: 17px; }\n"
    "#subtitle { text-anchor: middle; fill: rgb(90,90,90); }\n"
    "#frames rect { rx: 2px; ry: 2px; }\n"
    "#frames > g { cursor: pointer; }\n"
    "#frames > g:hover > rect { stroke: rgb(0,0,0); stroke-width: 0.5px; }\n"
    "#frames text { pointer-events: none; }\n"
    "#unzoom, #search, #ignorecase { cursor: pointer; }\n"
    "#search, #ignorecase { opacity: 0.35; }\n"
    "#search:hover, #ignorecase:hover, #search.show, #ignorecase.show { opacity: 1; }\n"
    "#matched { text-anchor: start; }\n"
    "#searchbox { width: 100%; height: 100%; box-sizing: border-box; font: 12px Verdana, \"DejaVu Sans\", sans-serif; }\n"
    ".hide { display: none; }\n"
    ".parent { opacity: 0.5; }\n"
    "";
static const char BS_ASSET_svg_flamegraph_css_sha256[] = "V3lsMhkhnDxuelzI4/UVA0KBpoG6D/9k73af3Pc5z+g=";
