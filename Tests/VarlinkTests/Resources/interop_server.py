"""A tiny Varlink server made with the reference implementation (PyPI: varlink), serving
org.example.interop from the .varlink file beside this script. Prints "ready" once it listens.
Used by InteropTests to exercise errorbus's VarlinkClient against a foreign server.

Usage: python3 interop_server.py SOCKET_PATH

It exits when its standard input reaches its end, so that it does not outlive a test process
that dies without stopping it.
"""
import os
import sys
import threading

import varlink

service = varlink.Service(
    vendor="varlink.org",
    product="interop server",
    version="1",
    url="https://varlink.org",
    interface_dir=os.path.dirname(os.path.abspath(__file__)),
)


@service.interface("org.example.interop")
class Interop:
    def Echo(self, text, times=None):
        return {"text": text * (times or 1)}

    def Count(self, to, _more=False):
        for value in range(1, to + 1):
            yield {"value": value, "_continues": value < to}

    def Fail(self, id):
        raise varlink.VarlinkError({"error": "org.example.interop.NoSuchThing", "parameters": {"id": id}})


class Handler(varlink.RequestHandler):
    service = service


def exit_with_parent():
    sys.stdin.read()
    os._exit(0)


threading.Thread(target=exit_with_parent, daemon=True).start()
server = varlink.ThreadingServer("unix:" + sys.argv[1], Handler)
print("ready", flush=True)
server.serve_forever()
