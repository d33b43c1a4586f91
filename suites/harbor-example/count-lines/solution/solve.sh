#!/bin/bash
wc -l < /app/visits.log | tr -d ' ' > /app/count.txt
