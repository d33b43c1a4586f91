#!/bin/bash
cut -d' ' -f1 /app/visits.log | sort -u > /app/hosts.txt
wc -l < /app/hosts.txt | tr -d ' ' > /app/host-count.txt
