-- wrk script for the `echo` application: POST the 1 KiB body of benchmarks/apps/payloads.py (ECHO).
wrk.method = "POST"
wrk.body = string.rep("abcdefghijklmnopqrstuvwxyz012345", 32)
wrk.headers["Content-Type"] = "application/octet-stream"
