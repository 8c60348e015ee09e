#!/usr/bin/env bash
# Installs the Debian packages dataclaw uses when they are missing: bubblewrap (the sandbox), tesseract
# (OCR anchors) and chromium + chromium-driver (the viewer's browser tests; never downloaded at run time).
# Safe to rerun: does nothing when all are present.
set -euo pipefail
need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v tesseract >/dev/null 2>&1 || need+=(tesseract-ocr tesseract-ocr-eng)
command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 || need+=(chromium chromium-driver)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then sudo=""; elif command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
  echo "dataclaw setup: missing system packages: ${need[*]} (run as root or install them with apt-get)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
