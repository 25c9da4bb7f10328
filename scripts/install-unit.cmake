# Run by `cmake --install` (CMakeLists.txt): docker/memoryd.service into
# <prefix>/lib/systemd/system, its ExecStart pointed at the program installed with it.
# MEMORYD_UNIT_SOURCE and MEMORYD_BINDIR are set by the install step before this script.
file(READ "${MEMORYD_UNIT_SOURCE}" unit)
string(REPLACE "ExecStart=/usr/local/bin/memoryd"
               "ExecStart=${CMAKE_INSTALL_PREFIX}/${MEMORYD_BINDIR}/memoryd" unit "${unit}")
set(dest "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/lib/systemd/system/memoryd.service")
message(STATUS "Installing: ${dest}")
file(WRITE "${dest}" "${unit}")
