"""/api/docs without a browser: everything it loads is the studio's own, and no script is
inline (the browser test checks that it renders: tests/browser/test_api_docs.py)."""

import re

from django.test import Client


def test_the_docs_page_loads_only_local_files_and_no_inline_script(db):
    page = Client().get("/api/docs").content.decode()
    sources = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert sources and all(s.startswith("/static/") for s in sources), sources
    assert "/static/ninja/swagger-ui-bundle.js" in sources
    for attributes, body in re.findall(r"<script([^>]*)>(.*?)</script>", page, re.S):
        assert "src=" in attributes or 'type="application/json"' in attributes, attributes
