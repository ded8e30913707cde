"""Calls a Varlink server with the reference implementation's client (PyPI: varlink) and prints
what it received as one JSON object. Used by InteropTests against errorbus's VarlinkServer.

Usage: python3 interop_client.py SOCKET_PATH
"""
import json
import sys

import varlink

result = {}
with varlink.Client("unix:" + sys.argv[1]) as client:
    with client.open("org.varlink.service") as service:
        info = service.GetInfo()
        result["info"] = info
        # Every interface's definition must parse as Varlink IDL.
        result["members"] = {
            name: sorted(varlink.Interface(service.GetInterfaceDescription(name)["description"]).members)
            for name in info["interfaces"]
        }
    # open() fetches the definition through GetInterfaceDescription and parses it too.
    with client.open("io.errorbus.test") as test:
        result["echo"] = test.Echo(text="ab", times=2)
        result["echoWithoutOptional"] = test.Echo(text="once")
        result["count"] = [reply["value"] for reply in test.Count(to=3, _more=True)]
        try:
            test.Fail(id=7)
        except varlink.VarlinkError as error:
            result["error"] = {"name": error.error(), "parameters": error.parameters()}

print(json.dumps(result, sort_keys=True))
