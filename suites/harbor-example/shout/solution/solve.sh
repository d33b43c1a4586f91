#!/bin/bash
tr a-z A-Z < /app/greeting.txt > /app/out.txt
