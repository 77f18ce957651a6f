"""Every relative link of the built book (docs/book/**/*.html) names a file of the book, and every
#anchor an id of that page: a link that resolves in the Markdown but leaves the book (a file of the
repository outside docs/src) is dead in the HTML, and this finds it."""
import html.parser
import pathlib
import sys
import urllib.parse

root = pathlib.Path(sys.argv[1]).resolve()


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.links, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])


pages = {}
for path in root.rglob("*.html"):
    p = Page()
    p.feed(path.read_text(encoding="utf-8"))
    pages[path] = p

dead = []
for path, page in pages.items():
    if path.name in ("print.html", "404.html", "toc.html"):
        continue  # mdBook's own pages: print.html rewrites links, 404 uses an absolute site root
    for href in page.links:
        url = urllib.parse.urlparse(href)
        if url.scheme or href.startswith("//"):
            continue  # outside the book: the network is not ours to check
        target = (path.parent / urllib.parse.unquote(url.path)).resolve() if url.path else path
        if not target.exists():
            dead.append(f"{path.relative_to(root)}: {href} (no such file)")
        elif url.fragment and target.suffix == ".html":
            if url.fragment not in pages.get(target, Page()).ids:
                dead.append(f"{path.relative_to(root)}: {href} (no such id)")

if dead:
    print("dead links in the built book:\n" + "\n".join(dead))
    sys.exit(1)
print(f"book links: {sum(len(p.links) for p in pages.values())} links in {len(pages)} pages, none dead")
