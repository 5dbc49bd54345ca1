#!/usr/bin/env bash
echo "compat build not written yet" >&2; exit 1
