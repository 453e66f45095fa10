"""A stand-in for answers of the real Hub that `kernelhub serve` does not give, for
test_site_cache.py: run as `python real_hub_shapes.py HOST PORT`; GET /_log lists what it was
asked (method, path with query).

  /api/models/org/name/tree/<SHA>            a tree listing naming an Xet file's "xetHash"
  /org/name/resolve/main/small.json          307 to /api/resolve-cache/... (host-less), as the
                                             Hub does for small files
  /api/resolve-cache/models/org/name/<SHA>/small.json?etag=...
                                             the file, JSON that contains "xetHash" itself
  /legacy/resolve/<SHA>/config.json          a repo without an org (gpt2-style)
  /org/name/resolve/<SHA>/xet.bin            302 to /cdn/xet.bin on this server, with the Xet
                                             headers and Link of the real Hub
  /cdn/xet.bin?sig=1                         the object, with the object host's own ETag and a
                                             Set-Cookie
"""

import http.server
import json
import sys

SHA = "c0ffee" + "0" * 34
XET_BODY = b"xet object bytes\n"
SMALL_BODY = b'{"xetHash": "a file of the repo: its bytes must reach clients unchanged"}\n'
LINKED_ETAG = '"' + "5" * 64 + '"'


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    log: list = []

    def log_message(self, *args):  # quiet
        pass

    def answer(self, status: int, body: bytes = b"", headers: dict | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        path = self.path
        if path == "/_log":
            return self.answer(200, json.dumps(Handler.log).encode(), {"Content-Type": "application/json"})
        Handler.log.append([self.command, path])
        origin = f"http://{self.headers['Host']}"
        commit = {"X-Repo-Commit": SHA}
        if path.startswith(f"/api/models/org/name/tree/{SHA}"):
            listing = [{"type": "file", "path": "xet.bin", "size": len(XET_BODY), "oid": "1" * 40,
                        "lfs": {"oid": LINKED_ETAG.strip('"'), "size": len(XET_BODY)}, "xetHash": "f" * 64}]
            return self.answer(200, json.dumps(listing, separators=(",", ":")).encode(),
                               {"Content-Type": "application/json; charset=utf-8"})
        if path == "/org/name/resolve/main/small.json":
            return self.answer(307, b"", {**commit, "Location": f"/api/resolve-cache/models/org/name/{SHA}/small.json"
                                                                f"?etag=%22{'2' * 40}%22"})
        if path.startswith(f"/api/resolve-cache/models/org/name/{SHA}/small.json?"):
            return self.answer(200, SMALL_BODY, {**commit, "Content-Type": "application/json",
                                                 "ETag": f'"{"2" * 40}"'})
        if path == f"/legacy/resolve/{SHA}/config.json":
            return self.answer(200, b"{}\n", {**commit, "Content-Type": "text/plain", "ETag": f'"{"3" * 40}"'})
        if path == f"/org/name/resolve/{SHA}/xet.bin":
            return self.answer(302, b"", {
                **commit, "Location": f"{origin}/cdn/xet.bin?sig=1", "X-Linked-Etag": LINKED_ETAG,
                "X-Linked-Size": str(len(XET_BODY)), "ETag": f'"{"4" * 40}"', "X-Xet-Hash": "f" * 64,
                "X-Xet-Refresh-Route": f"/api/models/org/name/xet-read-token/{SHA}",
                "Link": f'<{origin}/api/models/org/name/xet-read-token/{SHA}>; rel="xet-auth"'})
        if path == "/cdn/xet.bin?sig=1":
            return self.answer(200, XET_BODY, {"Content-Type": "application/octet-stream", "ETag": '"s3-etag"',
                                               "Set-Cookie": "AWSALB=sticky; Path=/"})
        return self.answer(404, b'{"error":"not here"}', {"Content-Type": "application/json"})


if __name__ == "__main__":
    http.server.ThreadingHTTPServer((sys.argv[1], int(sys.argv[2])), Handler).serve_forever()
