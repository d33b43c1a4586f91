#!/bin/bash
# Harbor verifier with partial credit: reward.json holds one field per check, each 0 or 1.
mkdir -p /logs/verifier
hosts=0; count=0
cut -d' ' -f1 /app/visits.log | sort -u > /tmp/expected
if [ -f /app/hosts.txt ] && diff -q /tmp/expected /app/hosts.txt >/dev/null; then hosts=1; fi
if [ -f /app/host-count.txt ] && [ "$(tr -d ' \n' < /app/host-count.txt)" = "$(wc -l < /tmp/expected)" ]; then count=1; fi
printf '{"hosts": %s, "count": %s}\n' "$hosts" "$count" > /logs/verifier/reward.json
