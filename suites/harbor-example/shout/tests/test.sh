#!/bin/bash
mkdir -p /logs/verifier
if [ -f /app/out.txt ] && [ "$(cat /app/out.txt)" = "$(tr a-z A-Z < /app/greeting.txt)" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
