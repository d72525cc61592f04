# Sourced by the scripts that need Debian packages (setup.sh, site.sh, fuzz.sh):
#   install_packages WHO PACKAGE...   installs those not installed yet, as root or with sudo,
#                                     saying "WHO: installing …" first.
install_packages() {
  local who=$1 p missing=()
  shift
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "$who: installing ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}
