#!/usr/bin/env python3
"""The plain loop of scripts/bench-s3: THREADS threads PUT every file of DIRECTORY into BUCKET with
botocore (AWS Signature Version 4, the file's SHA-256 as x-amz-checksum-sha256, as errorbusd
sends it), and delete each file once stored. No store, no retry: what the server allows.

  s3_put_loop.py INFO_JSON BUCKET DIRECTORY THREADS
"""
import base64, hashlib, json, os, platform, queue, sys, threading

import boto3
from botocore.config import Config


def main():
    info, bucket, directory, threads = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    client = boto3.client(
        "s3", endpoint_url=info["endpoint"], region_name=info["region"],
        aws_access_key_id=info["accessKeyId"], aws_secret_access_key=info["secretAccessKey"],
        config=Config(s3={"addressing_style": "path"}, max_pool_connections=threads, retries={"max_attempts": 1}),
    )
    names = queue.Queue()
    for name in sorted(os.listdir(directory)):
        names.put(name)
    failures = []
    host = platform.node()

    def work():
        while True:
            try:
                name = names.get_nowait()
            except queue.Empty:
                return
            path = os.path.join(directory, name)
            with open(path, "rb") as file:
                body = file.read()
            checksum = base64.b64encode(hashlib.sha256(body).digest()).decode()
            try:
                client.put_object(Bucket=bucket, Key="%s/%s" % (host, name), Body=body, ChecksumSHA256=checksum)
                os.unlink(path)
            except Exception as error:  # noqa: BLE001 - counted and reported
                failures.append("%s: %s" % (name, error))

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if failures:
        sys.exit("%d failed, first: %s" % (len(failures), failures[0]))


if __name__ == "__main__":
    main()
