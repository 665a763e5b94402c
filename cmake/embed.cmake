# tuned_embed(VAR FILE SYMBOL): embeds FILE as `extern const char SYMBOL[]` in
# namespace tuned::embedded, appending the generated .cc to ${VAR}_SRCS.
# Generated at configure time; editing FILE re-runs CMake.
function(tuned_embed var file symbol)
  set(src ${CMAKE_CURRENT_SOURCE_DIR}/${file})
  file(READ ${src} text)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/gen/embed/${symbol}.cc)
  file(CONFIGURE OUTPUT ${out} CONTENT
"// Generated from @file@ by cmake/embed.cmake; do not edit.
namespace tuned::embedded {
extern const char @symbol@[];
const char @symbol@[] = R\"tuned_embed(@text@)tuned_embed\";
}  // namespace tuned::embedded
" @ONLY)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${src})
  set(${var}_SRCS ${${var}_SRCS} ${out} PARENT_SCOPE)
endfunction()
