#!/bin/bash
# Harbor verifier: reward 1 when /app/count.txt holds the line count of /app/visits.log.
mkdir -p /logs/verifier
expected=$(wc -l < /app/visits.log)
if [ -f /app/count.txt ] && [ "$(tr -d ' \n' < /app/count.txt)" = "$expected" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
