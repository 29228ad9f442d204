# cmake -DIN=file -DOUT=file.inc -P embed_bytes.cmake: writes IN's bytes as the elements of a C
# array initializer (0x.., 0x.., ...), 32 to a line.
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x..,){32})" "\\1\n" bytes "${bytes}")
file(WRITE "${OUT}" "${bytes}\n")
