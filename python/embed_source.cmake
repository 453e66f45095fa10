# cmake -DINPUT=file.py -DOUTPUT=file.cpp -P embed_source.cmake: the Python source as a C++
# string constant (kernelhub::python::detail::kImporterSource), in chunks under the
# compiler's string-literal limit.
file(READ "${INPUT}" _source)
string(LENGTH "${_source}" _length)
set(_out "// Generated from ${INPUT}; do not edit.\n")
string(APPEND _out "namespace kernelhub::python::detail {\nextern const char* const kImporterSource;\n")
string(APPEND _out "const char* const kImporterSource =\n")
set(_offset 0)
while(_offset LESS _length)
  string(SUBSTRING "${_source}" ${_offset} 8000 _chunk)
  string(APPEND _out "    R\"khpy(${_chunk})khpy\"\n")
  math(EXPR _offset "${_offset} + 8000")
endwhile()
string(APPEND _out "    ;\n}  // namespace kernelhub::python::detail\n")
file(WRITE "${OUTPUT}" "${_out}")
